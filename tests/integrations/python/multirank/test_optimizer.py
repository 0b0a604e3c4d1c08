"""DistributedOptimizer and the broadcasts of parameters and optimizer state,
against one process that trains on the whole (concatenated) batch."""
import copy

import pytest
import torch

import trainrun.torch as hvd

BATCH = 8  # per rank


def make_model(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh(), torch.nn.Linear(7, 3))


def global_batch(step):
    g = torch.Generator().manual_seed(1000 + step)
    return torch.randn(BATCH * hvd.size(), 5, generator=g), torch.randn(BATCH * hvd.size(), 3, generator=g)


def make_optimizer(kind, params):
    if kind == 'sgd':
        return torch.optim.SGD(params, lr=0.1, momentum=0.9)
    return torch.optim.Adam(params, lr=0.01)


def mine(tensor):
    return tensor[hvd.rank() * BATCH:(hvd.rank() + 1) * BATCH]


@pytest.mark.parametrize('kind', ['sgd', 'adam'])
@pytest.mark.parametrize('compression', ['none', 'fp16'])
@pytest.mark.parametrize('passes', [1, 2])
def test_parity_with_one_process_on_the_whole_batch(kind, compression, passes):
    reference = make_model()
    reference_opt = make_optimizer(kind, reference.parameters())
    model = make_model(seed=0 if hvd.rank() == 0 else 100 + hvd.rank())  # equal only after the broadcast
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    opt = hvd.DistributedOptimizer(make_optimizer(kind, model.parameters()),
                                   named_parameters=model.named_parameters(),
                                   compression=getattr(hvd.Compression, compression),
                                   backward_passes_per_step=passes)
    for step in range(4):
        x, y = global_batch(step)
        reference_opt.zero_grad()
        torch.nn.functional.mse_loss(reference(x), y).backward()
        reference_opt.step()

        opt.zero_grad()
        for xs, ys in zip(mine(x).chunk(passes), mine(y).chunk(passes)):
            (torch.nn.functional.mse_loss(model(xs), ys) / passes).backward()
        opt.step()
    tolerance = 1e-5 if compression == 'none' else 2e-2
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        assert torch.allclose(p, q, atol=tolerance), name
    # Every rank holds the same model.
    gathered = hvd.allgather(torch.cat([p.detach().flatten() for p in model.parameters()]).unsqueeze(0))
    assert torch.equal(gathered[0], gathered[-1])


def test_gradients_computed_too_often_are_refused():
    model = make_model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters())
    x, y = global_batch(0)
    torch.nn.functional.mse_loss(model(x), y).backward()
    with pytest.raises(AssertionError, match='backward_passes_per_step'):
        torch.nn.functional.mse_loss(model(x), y).backward()
    opt.synchronize()


@pytest.mark.parametrize('kind', ['sgd', 'adam'])
def test_broadcast_optimizer_state_creates_state_on_other_ranks(kind):
    model = make_model()
    opt = make_optimizer(kind, model.parameters())
    if hvd.rank() == 0:  # only the root has state
        for step in range(2):
            x, y = global_batch(step)
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        for group in opt.param_groups:
            group['lr'] = 0.123
    hvd.broadcast_parameters(model.named_parameters(), root_rank=0)
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    assert all(group['lr'] == 0.123 for group in opt.param_groups)
    state = opt.state_dict()['state']
    assert len(state) == len(list(model.parameters()))
    flat = [v for s in state.values() for v in s.values() if isinstance(v, torch.Tensor)]
    ours = torch.cat([v.double().flatten() for v in flat])
    root = hvd.broadcast(ours, 0, name=f'state.check.{kind}')
    assert torch.equal(ours, root)
    key = 'momentum_buffer' if kind == 'sgd' else 'exp_avg_sq'
    assert all(key in s for s in state.values())
    # Training goes on identically everywhere.
    before = copy.deepcopy(model.state_dict())
    x, y = global_batch(9)
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
    delta = torch.cat([(model.state_dict()[k] - before[k]).flatten() for k in before])
    assert torch.equal(hvd.broadcast(delta, 0, name=f'state.delta.{kind}'), delta)


@pytest.mark.parametrize('form', ['state_dict', 'named_parameters', 'parameters'])
def test_broadcast_parameters_forms(form):
    model = make_model(seed=hvd.rank())
    params = {'state_dict': model.state_dict, 'named_parameters': model.named_parameters,
              'parameters': model.parameters}[form]()
    hvd.broadcast_parameters(params, root_rank=0)
    assert all(torch.equal(p, q) for p, q in zip(model.parameters(), make_model(seed=0).parameters()))
