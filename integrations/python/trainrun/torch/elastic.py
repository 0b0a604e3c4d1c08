"""horovod.torch.elastic on trainrun: `hvd.elastic.run`, `hvd.elastic.TorchState`,
`hvd.elastic.ObjectState` and `hvd.elastic.ElasticSampler` (see trainrun.elastic
for what run() recovers from).

    state = hvd.elastic.TorchState(model=model, optimizer=optimizer, sampler=sampler, epoch=0, batch=0)
    state.register_reset_callbacks([lambda: set_lr(optimizer, lr * hvd.size())])

    @hvd.elastic.run
    def train(state):
        for state.epoch in range(state.epoch, epochs):
            for state.batch, (x, y) in enumerate(DataLoader(data, sampler=state.sampler)):
                ...; optimizer.step()
                state.sampler.record_batch(state.batch, batch_size)
                if state.batch % 10 == 0:
                    state.commit()
            state.sampler.set_epoch(state.epoch + 1)
"""
import functools
import io
import math

import torch

from trainrun.elastic import HostsUpdatedInterrupt, ObjectState, State, generation, is_enabled, run  # noqa: F401
from trainrun.torch import mpi_ops


def _has_state_dict(value):
    return hasattr(value, 'state_dict') and hasattr(value, 'load_state_dict')


class TorchState(ObjectState):
    """A State of a model, an optimizer and any other object with
    state_dict()/load_state_dict() (an ElasticSampler, a scheduler), plus
    plain values, all read and set as attributes. Loading copies into the
    existing parameters and optimizer state, so a DistributedOptimizer built
    on them stays valid."""

    def __init__(self, model=None, optimizer=None, **kwargs):
        stateful = {'model': model, 'optimizer': optimizer}
        stateful.update({k: v for k, v in kwargs.items() if _has_state_dict(v)})
        stateful = {k: v for k, v in stateful.items() if v is not None}
        super().__init__(**{k: v for k, v in kwargs.items() if k not in stateful})
        for name in sorted(stateful):
            setattr(self, name, stateful[name])
            self.add_part(name, functools.partial(self._save, name), functools.partial(self._load, name))

    def _save(self, name):
        buffer = io.BytesIO()
        torch.save(getattr(self, name).state_dict(), buffer)
        return buffer.getvalue()

    def _load(self, name, data):
        getattr(self, name).load_state_dict(torch.load(io.BytesIO(data), map_location='cpu'))

    def reset(self):
        for value in vars(self).values():
            if isinstance(value, ElasticSampler):
                value.reset()


class ElasticSampler(torch.utils.data.Sampler):
    """Horovod's ElasticSampler: shards a dataset over the current ranks and
    remembers which samples this epoch has processed, so that after a re-form
    the epoch goes on with the samples left, re-sharded over the new size.

    record_batch(i, batch_size) after each step records the samples that
    every rank processed in it (the ranks step together), so the processed
    set is the same on every rank without a collective; processed_num counts
    them. Put the sampler in a TorchState to commit and restore it."""

    def __init__(self, dataset, shuffle=True, seed=0):
        self.dataset = dataset
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = 0
        self.processed_indices = set()
        self.reset()

    def set_epoch(self, epoch):
        """Starts epoch `epoch`: nothing processed yet, a new shuffle."""
        self.epoch = epoch
        self.processed_indices = set()
        self.reset()

    def record_batch(self, batch_idx, batch_size):
        """Every rank's next batch is processed: the next batch_size samples of
        each rank since the last reset. As in Horovod, batch_idx is not used
        (after a restore the count goes on from the restored one)."""
        start = self._recorded
        end = min(start + batch_size * self.num_replicas, self.total_size)
        self.processed_indices.update(self.remaining_indices[start:end])
        self._recorded = end

    def record_indices(self, indices):
        """These samples are processed; call it with the same indices on every rank."""
        self.processed_indices.update(indices)

    @property
    def processed_num(self):
        """How many samples of this epoch are processed, over every rank (Horovod's counter)."""
        return len(self.processed_indices)

    def get_indices(self, batch_idx, batch_size):
        """This rank's samples of step `batch_idx`."""
        start = batch_idx * batch_size
        return self.indices[start:min(start + batch_size, len(self.indices))]

    def state_dict(self):
        return {'epoch': self.epoch, 'processed_indices': sorted(self.processed_indices)}

    def load_state_dict(self, state_dict):
        self.epoch = state_dict['epoch']
        self.processed_indices = set(state_dict['processed_indices'])
        self.reset()

    def reset(self):
        """Re-shards the samples this epoch has not processed over the current ranks."""
        self.num_replicas, self.rank = mpi_ops.size(), mpi_ops.rank()
        order = range(len(self.dataset))
        if self.shuffle:  # the epoch's order, whatever is left of it
            order = torch.randperm(len(self.dataset), generator=torch.Generator().manual_seed(self.seed + self.epoch))
            order = order.tolist()
        left = [i for i in order if i not in self.processed_indices]
        self.num_samples = math.ceil(len(left) / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        # Padded with the first samples so that every rank takes as many steps.
        self.remaining_indices = (left * (1 + self.total_size // max(len(left), 1)))[:self.total_size]
        self.indices = self.remaining_indices[self.rank:self.total_size:self.num_replicas]
        self._recorded = 0  # samples of remaining_indices that record_batch() took

    def __iter__(self):
        return iter(self.indices)

    def __len__(self):
        return self.num_samples
