"""Horovod's grouped_allgather and grouped_reducescatter (and their async
forms): one op per tensor, named '<name>.<i>', under one handle that
synchronize() turns into the list of results. The engine may fuse them like
any other ops of a cycle. Their differentiable synchronous forms are in
autograd_ops.py."""
import torch

from trainrun.torch import engine_ops


def _check_group(tensors, op):
    if not isinstance(tensors, (list, tuple)) or not tensors:
        raise ValueError(f'{op} takes a non-empty list of tensors')
    for t in tensors:
        if not isinstance(t, torch.Tensor):
            raise ValueError(f'{op} takes a list of tensors, not {type(t).__name__}')


def _names(op, name, count, process_set):
    base = engine_ops._name(op, name, process_set)
    return [f'{base}.{i}' for i in range(count)]


def grouped_allgather_async(tensors, name=None, process_set=None):
    """Handle of an allgather of each tensor; synchronize() gives the list."""
    _check_group(tensors, 'grouped_allgather')
    names = _names('grouped_allgather', name, len(tensors), process_set)
    handles = [engine_ops.allgather_async(t, name=n, process_set=process_set) for t, n in zip(tensors, names)]
    return engine_ops._submit_group(handles, list)


def grouped_reducescatter_async(tensors, name=None, op=engine_ops.Average, process_set=None, prescale_factor=1.0,
                                postscale_factor=1.0):
    """Handle of a reducescatter of each tensor; synchronize() gives the list."""
    _check_group(tensors, 'grouped_reducescatter')
    names = _names('grouped_reducescatter', name, len(tensors), process_set)
    handles = [engine_ops.reducescatter_async(t, name=n, op=op, process_set=process_set,
                                              prescale_factor=prescale_factor, postscale_factor=postscale_factor)
               for t, n in zip(tensors, names)]
    return engine_ops._submit_group(handles, list)