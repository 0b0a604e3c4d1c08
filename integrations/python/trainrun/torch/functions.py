"""Horovod's horovod.torch.functions: broadcast of parameters, optimizer
state and Python objects, gather of objects. Built on mpi_ops (the engine);
objects travel as pickled bytes in uint8 tensors."""
import io
import itertools

import torch

from trainrun._describe import exception_text
from trainrun.torch import mpi_ops

try:
    import cloudpickle as _pickle
except ImportError:  # plain pickle handles everything but lambdas and local classes
    import pickle as _pickle

_object_counters = {}


def broadcast_parameters(params, root_rank, process_set=None):
    """Root's values replace every rank's, in place. `params` is a
    state_dict (dict) or named_parameters() (pairs (name, tensor))."""
    if isinstance(params, dict):
        params = sorted(params.items())
    else:  # named_parameters(), or bare tensors (named by position)
        params = [p if isinstance(p, tuple) else (str(i), p) for i, p in enumerate(params)]
    handles = [mpi_ops.broadcast_async_(p, root_rank, name=f'parameter.{name}', process_set=process_set)
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


def _zero_missing_gradients(optimizer):
    """As Horovod's broadcast_optimizer_state: a trainable parameter without a
    gradient gets a zero one (sparse for SparseAdam), which user code may read."""
    for group in optimizer.param_groups:
        for p in group['params']:
            if p.requires_grad and p.grad is None:
                p.grad = torch.zeros_like(p)
                if isinstance(optimizer, torch.optim.SparseAdam):
                    p.grad = p.grad.to_sparse()


def broadcast_optimizer_state(optimizer, root_rank, name='optimizer', process_set=None):
    """Root's optimizer state (momentum buffers, Adam moments and steps,
    learning rates, ...) replaces every other rank's; ranks without state yet
    get it created. The structure goes as a pickled object, the tensors
    through the engine's broadcast."""
    tensors = []
    skeleton = None
    _zero_missing_gradients(optimizer)
    if mpi_ops.rank() == root_rank:
        skeleton = _split_tensors(optimizer.state_dict(), tensors)
    skeleton = broadcast_object(skeleton, root_rank, name=f'{name}.structure', process_set=process_set)
    if mpi_ops.rank() != root_rank:
        slots = []
        _collect_slots(skeleton, slots)
        tensors = [None] * len(slots)
        for slot in slots:
            tensors[slot.index] = torch.empty(slot.shape, dtype=slot.dtype)
    handles = [mpi_ops.broadcast_async_(t, root_rank, name=f'{name}.{i}', process_set=process_set)
               for i, t in enumerate(tensors)]
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


def _pickled(obj):
    """(payload, length, error): obj pickled into a uint8 tensor and its
    length; or, when pickling fails, the error's text as the payload, a
    negative length (-1 - its size) that tells the other ranks so, and the
    error. Either way every rank makes the same calls after it, so op names
    stay in step."""
    try:
        payload = _to_bytes_tensor(obj)
        return payload, payload.numel(), None
    except Exception as error:  # noqa: B902 - whatever pickling raises
        text = f'{type(error).__name__}: {exception_text(error)}'.encode(errors='replace')
        return torch.frombuffer(bytearray(text), dtype=torch.uint8), -1 - len(text), error


def _payload_size(length):
    return length if length >= 0 else -1 - length


def _object_name(op, process_set=None):
    # Not type(obj).__name__: non-root ranks often pass None. Counted per
    # process set, as mpi_ops counts unnamed ops.
    key = op if process_set is None else (op, process_set.process_set_id)
    counter = _object_counters.setdefault(key, itertools.count())
    return f'{op}.noname.{next(counter)}'


def broadcast_object(obj, root_rank=0, name=None, process_set=None):
    """Root's `obj` (anything cloudpickle can pickle) on every rank. When
    the root cannot pickle it, the root raises that error and every other
    rank a RuntimeError naming the root and the error; the next call works."""
    name = name or _object_name('broadcast_object', process_set)
    error = None
    if mpi_ops.rank() == root_rank:
        payload, n, error = _pickled(obj)
        length = torch.tensor([n], dtype=torch.int64)
    else:
        length = torch.zeros(1, dtype=torch.int64)
    mpi_ops.broadcast_(length, root_rank, name=f'{name}.length', process_set=process_set)
    n = int(length.item())
    if mpi_ops.rank() != root_rank:
        payload = torch.empty(_payload_size(n), dtype=torch.uint8)
    mpi_ops.broadcast_(payload, root_rank, name=f'{name}.data', process_set=process_set)
    if error is not None:
        raise error
    if n < 0:
        raise RuntimeError(f"broadcast_object '{name}': rank {root_rank} could not pickle the object: "
                           f"{payload.numpy().tobytes().decode(errors='replace')}")
    if mpi_ops.rank() == root_rank:
        return obj
    return _pickle.loads(payload.numpy().tobytes())


def allgather_object(obj, name=None, process_set=None):
    """Every rank's `obj`, in rank order. When a rank cannot pickle its
    object, that rank raises its error and every other rank a RuntimeError
    naming it; the next call works."""
    name = name or _object_name('allgather_object', process_set)
    payload, n, error = _pickled(obj)
    lengths = mpi_ops.allgather(torch.tensor([n], dtype=torch.int64), name=f'{name}.length',
                                process_set=process_set).tolist()
    data = mpi_ops.allgather(payload, name=f'{name}.data', process_set=process_set).numpy().tobytes()
    ranks = list(range(len(lengths))) if process_set is None else process_set.ranks
    if error is not None:
        raise error
    objects, failures, offset = [], [], 0
    for rank, length in zip(ranks, lengths):
        piece = data[offset:offset + _payload_size(length)]
        offset += _payload_size(length)
        if length < 0:
            failures.append(f"rank {rank}: {piece.decode(errors='replace')}")
        elif not failures:
            objects.append(_pickle.loads(piece))
    if failures:
        raise RuntimeError(f"allgather_object '{name}': could not pickle the object of " + '; '.join(failures))
    return objects
