"""hvd.elastic in a one-process world (no launcher, not elastic): what
commit/restore/sync keep, how errors cross run(), and the ElasticSampler's
bookkeeping. The real recoveries are in test_elastic_jobs.py."""
import gc
import pickle
import weakref

import pytest
import torch
from torch.utils.data import TensorDataset

import trainrun
import trainrun.torch as hvd


@pytest.fixture(scope='module', autouse=True)
def world():
    hvd.init()
    yield
    hvd.shutdown()


def make_model_and_optimizer():
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
                                         named_parameters=model.named_parameters())
    return model, optimizer


def train_step(model, optimizer):
    optimizer.zero_grad()
    model(torch.ones(4, 3)).sum().backward()
    optimizer.step()


def test_restore_brings_back_model_optimizer_and_values_of_the_last_commit():
    model, optimizer = make_model_and_optimizer()
    state = hvd.elastic.TorchState(model, optimizer, epoch=1, history=['a'])
    train_step(model, optimizer)
    state.commit()
    committed = {k: v.clone() for k, v in model.state_dict().items()}
    momentum = optimizer.state_dict()['state'][0]['momentum_buffer'].clone()
    train_step(model, optimizer)
    state.epoch, state.history = 5, ['a', 'b']
    weight = model.weight  # restore copies into the same parameters
    state.restore()
    assert model.weight is weight
    assert all(torch.equal(model.state_dict()[k], v) for k, v in committed.items())
    assert torch.equal(optimizer.state_dict()['state'][0]['momentum_buffer'], momentum)
    assert (state.epoch, state.history, state.commits) == (1, ['a'], 1)


def test_run_syncs_calls_once_and_returns_the_value_outside_an_elastic_job():
    assert not trainrun.elastic.is_enabled() and trainrun.elastic.generation() == 0
    state = hvd.elastic.ObjectState(step=3)
    calls = []

    @hvd.elastic.run
    def train(state, factor):
        calls.append(state.step)
        state.step *= factor
        state.commit()
        return state.step

    assert train(state, 7) == 21
    assert calls == [3]


def test_errors_cross_run_with_their_class_and_message():
    state = hvd.elastic.ObjectState()

    @hvd.elastic.run
    def unsupported(state):
        hvd.allreduce(torch.zeros(2, dtype=torch.complex64), name='flags')

    with pytest.raises(trainrun.UnsupportedError) as info:
        unsupported(state)
    assert info.value.code == 'Unsupported' and "'allreduce.flags'" in str(info.value)

    @hvd.elastic.run
    def user_bug(state):
        raise KeyError('no such column')

    with pytest.raises(KeyError, match='no such column'):
        user_bug(state)


def test_a_failing_save_is_raised_from_commit():
    state = hvd.elastic.ObjectState()

    def save():
        raise ValueError('cannot save')
    state.add_part('broken', save, lambda data: None)
    with pytest.raises(ValueError, match='cannot save'):
        state.commit()


def test_parts_are_checked():
    state = hvd.elastic.ObjectState(epoch=0)
    with pytest.raises(trainrun.InvalidArgumentError, match="elastic state 'objects' was added twice"):
        state.add_part('objects', bytes, lambda data: None)


def test_hosts_updated_is_horovods_interrupt_and_a_membership_change():
    assert issubclass(hvd.elastic.HostsUpdatedInterrupt, trainrun.MembershipChangedError)
    assert issubclass(trainrun.HostsUpdatedInterrupt, trainrun.TrainrunError)


def test_reset_callbacks_and_objects_survive_pickling_of_plain_values():
    state = hvd.elastic.ObjectState(best={'loss': 0.5})
    state.register_reset_callbacks([lambda: None])
    state.commit()
    state.best['loss'] = 0.1
    state.restore()
    assert state.best == {'loss': 0.5}
    assert pickle.loads(state._save_objects()) == {'best': {'loss': 0.5}}


def test_sampler_resumes_an_epoch_with_the_samples_left():
    dataset = TensorDataset(torch.arange(10.0))
    sampler = hvd.elastic.ElasticSampler(dataset, shuffle=True, seed=1)
    order = list(sampler)
    assert sorted(order) == list(range(10)) and len(sampler) == 10
    state = hvd.elastic.TorchState(sampler=sampler, epoch=0)
    sampler.record_batch(0, 3)
    assert sampler.get_indices(1, 3) == order[3:6]
    state.commit()
    sampler.record_batch(1, 3)
    state.restore()  # back to 3 processed: the other 7, in the epoch's order
    assert list(sampler) == order[3:] and len(sampler) == 7
    sampler.set_epoch(1)
    assert sorted(sampler) == list(range(10)) and list(sampler) != order


def test_a_state_and_its_model_are_freed_when_dropped():
    model, optimizer = make_model_and_optimizer()
    state = hvd.elastic.TorchState(model, optimizer, epoch=0)
    state.register_reset_callbacks([lambda: None])
    state.commit()
    gone = weakref.ref(model)
    del model, optimizer, state
    gc.collect()
    assert gone() is None
