"""The engine's side of horovod.torch.mpi_ops: init, the asynchronous
operations, synchronize and poll (mpi_ops.py adds the synchronous,
differentiable ones from autograd_ops.py and exports Horovod's names).

Tensors go to the engine by data pointer: no copy on the Python side for
in-place calls on contiguous tensors (a non-contiguous one is worked on
through a contiguous copy that is copied back). CUDA tensors: allreduce and
broadcast hand the engine device memory (NCCL, or staged by the backend;
scale factors applied here by torch on the device); allgather, alltoall and
reducescatter, whose outputs the engine allocates in host memory, are staged
here through host memory and their results moved to the tensor's device.
Each handle keeps its tensors referenced until synchronize() returns. Names default to
'<op>.noname.<n>', counted per op, so ranks that make the same calls in the
same order agree; pass name= when the order differs between ranks.
"""
import atexit
import itertools
import os

import torch

from trainrun import _core, elastic
from trainrun.torch import adasum
from trainrun.torch import process_sets as _sets

Average = _core.ReduceOp.Average
Sum = _core.ReduceOp.Sum
Min = _core.ReduceOp.Min
Max = _core.ReduceOp.Max
Product = _core.ReduceOp.Product
# Adasum (Maleki et al.) is no reduction the engine knows: trainrun.torch.adasum
# runs it over allgathers; it is this marker elsewhere.
Adasum = 'Adasum'

_DTYPES = {
    torch.uint8: _core.DataType.UInt8,
    torch.int8: _core.DataType.Int8,
    torch.int16: _core.DataType.Int16,
    torch.bool: _core.DataType.Bool,
    torch.int32: _core.DataType.Int32,
    torch.int64: _core.DataType.Int64,
    torch.float16: _core.DataType.Float16,
    torch.bfloat16: _core.DataType.BFloat16,
    torch.float32: _core.DataType.Float32,
    torch.float64: _core.DataType.Float64,
}
_TORCH_DTYPES = {v: k for k, v in _DTYPES.items()}

# handle -> (tensors kept alive, function turning the engine's output into the result)
_pending = {}
_counters = {}
_group_ids = itertools.count(-1, -1)  # handles of a group of engine handles are negative
_atexit_registered = False

is_initialized = _core.is_initialized
size = _core.size
rank = _core.rank
local_size = _core.local_size
local_rank = _core.local_rank
cross_size = _core.cross_size
cross_rank = _core.cross_rank


def init(comm=None, process_sets=None):
    """Starts trainrun from the launcher's environment (idempotent).
    process_sets: hvd.ProcessSet objects to register (every rank passes the
    same sets), or "dynamic" to allow add_process_set() later."""
    global _atexit_registered
    if isinstance(process_sets, str) and process_sets.lower() == 'dynamic':
        os.environ['HOROVOD_DYNAMIC_PROCESS_SETS'] = '1'
        process_sets = None
    _core.init()
    if not _atexit_registered:
        atexit.register(shutdown)
        _atexit_registered = True
    _sets._init_process_sets(list(process_sets or []))


def shutdown():
    """Stops the engine and the communicator; init() may be called again."""
    _pending.clear()
    _core.shutdown()


def _forget_engine():
    """After an elastic re-form: the old engine's handles are gone, and op
    names count from 0 again as they do in workers that join now."""
    _pending.clear()
    _counters.clear()


elastic._on_reform(_forget_engine)


def _forget_set_names(process_set_id):
    """A new set (perhaps under a removed one's id) counts its op names from 0 on every rank."""
    for key in [k for k in _counters if isinstance(k, tuple) and k[1] == process_set_id]:
        del _counters[key]


_sets._on_register.append(_forget_set_names)


def start_timeline(file_path, mark_cycles=False):
    """Rank 0 writes the engine's timeline (Chrome-trace JSON) to file_path
    from now on, closing the one it was writing, if any, complete; the same
    path again changes only mark_cycles. mark_cycles: a CYCLE_START mark at
    every negotiation cycle. Other ranks' calls do nothing. As Horovod's, but
    HOROVOD_TIMELINE=DYNAMIC is not needed. Raises ValueError before init()."""
    if not is_initialized():
        raise ValueError('trainrun is not initialized; call hvd.init() first')
    _core.start_timeline(os.fspath(file_path), bool(mark_cycles))


def stop_timeline():
    """Closes the timeline file (a complete JSON array) before returning;
    nothing when none is written. Raises ValueError before init()."""
    if not is_initialized():
        raise ValueError('trainrun is not initialized; call hvd.init() first')
    _core.stop_timeline()


class _Basics:
    """The one internal query of horovod.common.basics that Horovod's own
    tests (test_process_sets_static.py) call, as mpi_ops._basics."""

    @staticmethod
    def _get_process_set_ids_and_ranks():
        """{process set id: its ranks}, the job's (0) included."""
        return {i: list(_core.process_set_ranks(i)) for i in _core.process_set_ids()}


_basics = _Basics()


def is_homogeneous():
    return size() == local_size() * cross_size()


def mpi_threads_supported():
    return False


def _error(cls, code, message):
    e = cls(message)
    e.code = code
    return e


def _name(op, name, process_set=None):
    """Unnamed ops count per op and per process set: a rank in two
    overlapping sets numbers each set's ops as that set's other ranks do."""
    if name is None:
        key = op if process_set is None else (op, _sets._set_id(process_set))
        counter = _counters.setdefault(key, itertools.count())
        return f'{op}.noname.{next(counter)}'
    return f'{op}.{name}'


def _engine_tensor(tensor, name):
    """(pointer, dtype, shape, device) of a contiguous tensor, for _core."""
    dtype = _DTYPES.get(tensor.dtype)
    if dtype is None:
        raise _error(_core.UnsupportedError, 'Unsupported',
                     f"'{name}': dtype {tensor.dtype} is not supported by trainrun "
                     f"(supported: {', '.join(str(d) for d in _DTYPES)})")
    device = _core.CPU
    if tensor.is_cuda:
        device = tensor.device.index
        # The engine's NCCL calls are ordered after the legacy default stream
        # only (as cudaMemcpy is): wait for a side stream that may still write.
        stream = torch.cuda.current_stream(tensor.device)
        if stream != torch.cuda.default_stream(tensor.device):
            stream.synchronize()
    return (tensor.data_ptr(), dtype, list(tensor.shape), device)


def _op(average, op):
    if op is not None and average is not None:
        raise ValueError('average and op are exclusive; use op')
    if op is None:
        op = Average if average is None or average else Sum
    return op


def _submit(handle, keep, finish):
    _pending[handle] = (keep, finish)
    return handle


def _submit_group(handles, finish):
    """One handle for several: synchronize() gives finish([each result])."""
    return _submit(next(_group_ids), list(handles), finish)


def _scaled(tensor, factor):
    """tensor * factor in tensor's dtype, as Horovod scales: integers in double, truncated
    toward zero; float16 and bfloat16 in float32, on the host (the engine's arithmetic) with
    the factor as it is, on a GPU (Horovod's GPU kernels) with the factor rounded to the dtype."""
    if factor == 1.0:
        return tensor.contiguous()
    if tensor.dtype in (torch.float16, torch.bfloat16):
        if tensor.is_cuda:
            return tensor * torch.tensor(factor, dtype=tensor.dtype, device=tensor.device)
        return (tensor.float() * factor).to(tensor.dtype)
    if tensor.is_floating_point():
        return (tensor * factor).contiguous()
    return torch.trunc(tensor.double() * factor).to(tensor.dtype)


def _result(output, like):
    """The engine's allocated output (dtype, shape, bytes) as a tensor on `like`'s device."""
    dtype, shape, data, _ = output
    torch_dtype = _TORCH_DTYPES[dtype]
    if data is None or len(data) == 0:  # an empty result: no bytes to view as the dtype
        return torch.empty(shape, dtype=torch_dtype, device=like.device)
    return torch.frombuffer(data, dtype=torch.uint8).view(torch_dtype).reshape(shape).to(like.device)


def _host(tensor):
    """A contiguous tensor in host memory: a CUDA tensor's staged copy."""
    if tensor.is_cuda:
        return tensor.detach().to('cpu', memory_format=torch.contiguous_format)
    return tensor.contiguous()


def _engine_scales(works, prescale, postscale):
    """([(work, finish)], prescale, postscale) as the engine takes them: it
    scales host memory only, so CUDA works are scaled here, by torch on their
    device as the engine would (_scaled), and the engine gets factors 1."""
    if not any(work.is_cuda for work, _ in works):
        return works, prescale, postscale

    def scaled(work, finish):
        with torch.no_grad():
            if prescale != 1.0:
                work.copy_(_scaled(work, prescale))
        if postscale == 1.0:
            return finish

        def scale_after(output):
            with torch.no_grad():
                work.copy_(_scaled(work, postscale))
            return finish(output)
        return scale_after
    return [(work, scaled(work, finish)) for work, finish in works], 1.0, 1.0


def _in_place(tensor):
    """A contiguous tensor the engine may write, and how to finish with it."""
    if tensor.is_contiguous():
        return tensor, lambda _: tensor

    work = tensor.contiguous()

    def copy_back(_):
        with torch.no_grad():
            tensor.copy_(work)
        return tensor
    return work, copy_back


def _adasum_allreduce_async_(tensor, name, prescale_factor, postscale_factor, process_set):
    """op=Adasum (adasum.py): every rank allgathers the flat tensor and computes the same tree."""
    if _sets._set_id(process_set) != 0:
        raise NotImplementedError('Adasum on a process set is not supported; use the global process set')
    adasum.check(size())
    if not tensor.is_floating_point():
        raise ValueError(f"'{name}': Adasum needs a floating-point tensor, not {tensor.dtype}")
    flat = (tensor.detach().reshape(1, -1).double() * prescale_factor)
    gathered = allgather_async(flat, name=None if name is None else f'adasum.{name}')

    def finish(rows):
        (rows,) = rows
        result = adasum.tree(list(rows)) * postscale_factor
        with torch.no_grad():
            tensor.copy_(result.reshape(tensor.shape).to(tensor.dtype))
        return tensor
    return _submit_group([gathered], finish)


def _differentiable(tensor):
    return tensor.requires_grad and torch.is_grad_enabled()


def _copy(tensor):
    return tensor.detach().clone(memory_format=torch.contiguous_format)


def synchronize(handle):
    """Waits for an async operation and returns its result."""
    if handle not in _pending:
        raise ValueError(f'unknown or already synchronized handle {handle}')
    keep, finish = _pending.pop(handle)
    if handle < 0:
        return finish([synchronize(h) for h in keep])
    return finish(_core.synchronize(handle))


def poll(handle):
    """True once the operation of `handle` completed; synchronize() next."""
    if handle < 0 and handle in _pending:
        return all(poll(h) for h in _pending[handle][0])
    return _core.poll(handle)


def allreduce_async_(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                     process_set=None):
    if op == Adasum:
        return _adasum_allreduce_async_(tensor, name, prescale_factor, postscale_factor, process_set)
    name = _name('allreduce', name, process_set)
    [(work, finish)], prescale_factor, postscale_factor = _engine_scales([_in_place(tensor)], prescale_factor,
                                                                         postscale_factor)
    handle = _core.allreduce_async(name, _engine_tensor(work, name), _op(average, op), prescale_factor,
                                   postscale_factor, process_set=_sets._set_id(process_set))
    return _submit(handle, (tensor, work), finish)


def allreduce_async(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                    process_set=None):
    return allreduce_async_(_copy(tensor), average, name, op, prescale_factor, postscale_factor, process_set)


def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
               process_set=None):
    return synchronize(allreduce_async_(tensor, average, name, op, prescale_factor, postscale_factor,
                                        process_set))


def grouped_allreduce_async_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                             postscale_factor=1.0, process_set=None):
    if op == Adasum:
        handles = [_adasum_allreduce_async_(t, name and f'{name}.{i}', prescale_factor, postscale_factor, process_set)
                   for i, t in enumerate(tensors)]
        return _submit_group(handles, list)
    base = _name('grouped_allreduce', name, process_set)
    names = [f'{base}.{i}' for i in range(len(tensors))]
    works, prescale_factor, postscale_factor = _engine_scales([_in_place(t) for t in tensors], prescale_factor,
                                                              postscale_factor)
    handle = _core.grouped_allreduce_async(names, [_engine_tensor(w, n) for (w, _), n in zip(works, names)],
                                           _op(average, op), prescale_factor, postscale_factor,
                                           process_set=_sets._set_id(process_set))
    return _submit(handle, (list(tensors), works), lambda out: [finish(out) for _, finish in works])


def grouped_allreduce_async(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                            postscale_factor=1.0, process_set=None):
    return grouped_allreduce_async_([_copy(t) for t in tensors], average, name, op, prescale_factor,
                                    postscale_factor, process_set)


def grouped_allreduce_(tensors, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                       process_set=None):
    return synchronize(grouped_allreduce_async_(tensors, average, name, op, prescale_factor, postscale_factor,
                                                process_set))


def allgather_async(tensor, name=None, process_set=None):
    name = _name('allgather', name, process_set)
    work = _host(tensor)
    handle = _core.allgather_async(name, _engine_tensor(work, name), process_set=_sets._set_id(process_set))
    return _submit(handle, work, lambda output: _result(output, tensor))


def broadcast_async_(tensor, root_rank, name=None, process_set=None):
    name = _name('broadcast', name, process_set)
    work, finish = _in_place(tensor)
    handle = _core.broadcast_async(name, _engine_tensor(work, name), _sets._set_root(process_set, root_rank),
                                   process_set=_sets._set_id(process_set))
    return _submit(handle, (tensor, work), finish)


def broadcast_async(tensor, root_rank, name=None, process_set=None):
    return broadcast_async_(_copy(tensor), root_rank, name, process_set)


def broadcast_(tensor, root_rank, name=None, process_set=None):
    return synchronize(broadcast_async_(tensor, root_rank, name, process_set))


def alltoall_async(tensor, splits=None, name=None, process_set=None):
    name = _name('alltoall', name, process_set)
    work = _host(tensor)
    if isinstance(splits, torch.Tensor) and splits.dtype != torch.int32:
        raise _error(_core.InvalidArgumentError, 'InvalidArgument',
                     f"'{name}': splits must be a tensor of int32 (as Horovod's), not {splits.dtype}")
    split_list = [] if splits is None else [int(s) for s in (splits.tolist() if isinstance(splits, torch.Tensor)
                                                              else splits)]
    splits_device = splits.device if isinstance(splits, torch.Tensor) else 'cpu'

    def finish(output):
        result = _result(output, tensor)
        if splits is None:
            return result
        # As Horovod's: on the device of the splits given.
        return result, torch.tensor(output[3], dtype=torch.int32, device=splits_device)
    handle = _core.alltoall_async(name, _engine_tensor(work, name), split_list,
                                  process_set=_sets._set_id(process_set))
    return _submit(handle, work, finish)


def reducescatter_async(tensor, name=None, op=Average, process_set=None, prescale_factor=1.0,
                        postscale_factor=1.0):
    if op == Adasum:
        raise _error(_core.UnsupportedError, 'Unsupported', 'reducescatter does not support Adasum')
    name = _name('reducescatter', name, process_set)
    work = _host(_scaled(tensor, prescale_factor))

    def finish(output):
        return _scaled(_result(output, tensor), postscale_factor)
    handle = _core.reducescatter_async(name, _engine_tensor(work, name), op, process_set=_sets._set_id(process_set))
    return _submit(handle, work, finish)


def join(device=-1):
    """Declares this rank out of data; returns the rank that joined last."""
    return _core.join()


def barrier(process_set=None):
    _core.barrier(process_set=_sets._set_id(process_set))
