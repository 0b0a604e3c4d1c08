"""Horovod's grouped_allgather and grouped_reducescatter (and their async
forms): one op per tensor, named '<name>.<i>', under one handle that
synchronize() turns into the list of results. The engine may fuse them like
any other ops of a cycle."""
import torch

from trainrun.torch import mpi_ops


def _check_group(tensors, op):
    if not isinstance(tensors, (list, tuple)) or not tensors:
        raise ValueError(f'{op} takes a non-empty list of tensors')
    for t in tensors:
        if not isinstance(t, torch.Tensor):
            raise ValueError(f'{op} takes a list of tensors, not {type(t).__name__}')


def _names(op, name, count, process_set):
    base = mpi_ops._name(op, name, process_set)
    return [f'{base}.{i}' for i in range(count)]


def grouped_allgather_async(tensors, name=None, process_set=None):
    """Handle of an allgather of each tensor; synchronize() gives the list."""
    _check_group(tensors, 'grouped_allgather')
    names = _names('grouped_allgather', name, len(tensors), process_set)
    handles = [mpi_ops.allgather_async(t, name=n, process_set=process_set) for t, n in zip(tensors, names)]
    return mpi_ops._submit_group(handles, list)


def grouped_allgather(tensors, name=None, process_set=None):
    """Each tensor concatenated over the ranks along its first dimension; differentiable."""
    if any(mpi_ops._differentiable(t) for t in tensors):
        return list(mpi_ops._autograd().HorovodGroupedAllgather.apply(name, process_set, *tensors))
    return mpi_ops.synchronize(grouped_allgather_async(tensors, name, process_set))


def grouped_reducescatter_async(tensors, name=None, op=mpi_ops.Average, process_set=None, prescale_factor=1.0,
                                postscale_factor=1.0):
    """Handle of a reducescatter of each tensor; synchronize() gives the list."""
    _check_group(tensors, 'grouped_reducescatter')
    names = _names('grouped_reducescatter', name, len(tensors), process_set)
    handles = [mpi_ops.reducescatter_async(t, name=n, op=op, process_set=process_set, prescale_factor=prescale_factor,
                                           postscale_factor=postscale_factor) for t, n in zip(tensors, names)]
    return mpi_ops._submit_group(handles, list)


def grouped_reducescatter(tensors, name=None, compression=None, op=mpi_ops.Average, process_set=None,
                          prescale_factor=1.0, postscale_factor=1.0):
    """Each tensor reduced over the ranks, this rank's share of its first dimension; differentiable."""
    if any(mpi_ops._differentiable(t) for t in tensors):
        return list(mpi_ops._autograd().HorovodGroupedReducescatter.apply(name, op, process_set, prescale_factor,
                                                              postscale_factor, *tensors))
    return mpi_ops.synchronize(grouped_reducescatter_async(tensors, name, op, process_set, prescale_factor=prescale_factor,
                                                           postscale_factor=postscale_factor))
