"""Horovod's horovod.torch.functions: broadcast of parameters, optimizer
state and Python objects, gather of objects. Built on mpi_ops (the engine);
objects travel as pickled bytes in uint8 tensors."""
import io
import itertools

import torch

from trainrun.torch import mpi_ops

try:
    import cloudpickle as _pickle
except ImportError:  # plain pickle handles everything but lambdas and local classes
    import pickle as _pickle

_object_counters = {}


def broadcast_parameters(params, root_rank):
    """Root's values replace every rank's, in place. `params` is a
    state_dict (dict) or named_parameters() (pairs (name, tensor))."""
    if isinstance(params, dict):
        params = sorted(params.items())
    else:  # named_parameters(), or bare tensors (named by position)
        params = [p if isinstance(p, tuple) else (str(i), p) for i, p in enumerate(params)]
    handles = [mpi_ops.broadcast_async_(p, root_rank, name=f'parameter.{name}')
               for name, p in params if p is not None]
    for handle in handles:
        mpi_ops.synchronize(handle)


class _Slot:
    """Where a tensor of a broadcast state dict goes, by index in the tensor list."""

    def __init__(self, index, shape, dtype):
        self.index, self.shape, self.dtype = index, shape, dtype


def _split_tensors(value, tensors):
    """`value` with each engine-supported tensor replaced by a _Slot."""
    if isinstance(value, torch.Tensor) and value.dtype in mpi_ops._DTYPES and not value.is_cuda:
        tensors.append(value)
        return _Slot(len(tensors) - 1, tuple(value.shape), value.dtype)
    if isinstance(value, dict):
        return {k: _split_tensors(v, tensors) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_split_tensors(v, tensors) for v in value)
    return value


def _join_tensors(value, tensors):
    if isinstance(value, _Slot):
        return tensors[value.index]
    if isinstance(value, dict):
        return {k: _join_tensors(v, tensors) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_join_tensors(v, tensors) for v in value)
    return value


def broadcast_optimizer_state(optimizer, root_rank, name='optimizer'):
    """Root's optimizer state (momentum buffers, Adam moments and steps,
    learning rates, ...) replaces every other rank's; ranks without state yet
    get it created. The structure goes as a pickled object, the tensors
    through the engine's broadcast."""
    tensors = []
    skeleton = None
    if mpi_ops.rank() == root_rank:
        skeleton = _split_tensors(optimizer.state_dict(), tensors)
    skeleton = broadcast_object(skeleton, root_rank, name=f'{name}.structure')
    if mpi_ops.rank() != root_rank:
        slots = []
        _collect_slots(skeleton, slots)
        tensors = [None] * len(slots)
        for slot in slots:
            tensors[slot.index] = torch.empty(slot.shape, dtype=slot.dtype)
    handles = [mpi_ops.broadcast_async_(t, root_rank, name=f'{name}.{i}') for i, t in enumerate(tensors)]
    for handle in handles:
        mpi_ops.synchronize(handle)
    if mpi_ops.rank() != root_rank:
        optimizer.load_state_dict(_join_tensors(skeleton, tensors))


def _collect_slots(value, slots):
    if isinstance(value, _Slot):
        slots.append(value)
    elif isinstance(value, dict):
        for v in value.values():
            _collect_slots(v, slots)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _collect_slots(v, slots)


def _to_bytes_tensor(obj):
    buffer = io.BytesIO()
    _pickle.dump(obj, buffer)
    return torch.frombuffer(bytearray(buffer.getvalue()), dtype=torch.uint8)


def _object_name(op):
    # Not type(obj).__name__: non-root ranks often pass None.
    counter = _object_counters.setdefault(op, itertools.count())
    return f'{op}.noname.{next(counter)}'


def broadcast_object(obj, root_rank=0, name=None, process_set=None):
    """Root's `obj` (anything cloudpickle can pickle) on every rank."""
    name = name or _object_name('broadcast_object')
    if mpi_ops.rank() == root_rank:
        payload = _to_bytes_tensor(obj)
        length = torch.tensor([payload.numel()], dtype=torch.int64)
    else:
        length = torch.zeros(1, dtype=torch.int64)
    mpi_ops.broadcast_(length, root_rank, name=f'{name}.length')
    if mpi_ops.rank() != root_rank:
        payload = torch.empty(int(length.item()), dtype=torch.uint8)
    mpi_ops.broadcast_(payload, root_rank, name=f'{name}.data')
    if mpi_ops.rank() == root_rank:
        return obj
    return _pickle.loads(payload.numpy().tobytes())


def allgather_object(obj, name=None, process_set=None):
    """Every rank's `obj`, in rank order."""
    name = name or _object_name('allgather_object')
    payload = _to_bytes_tensor(obj)
    lengths = mpi_ops.allgather(torch.tensor([payload.numel()], dtype=torch.int64), name=f'{name}.length')
    data = mpi_ops.allgather(payload, name=f'{name}.data').numpy().tobytes()
    objects, offset = [], 0
    for n in lengths.tolist():
        objects.append(_pickle.loads(data[offset:offset + n]))
        offset += n
    return objects
