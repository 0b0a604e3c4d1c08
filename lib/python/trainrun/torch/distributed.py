"""trainrun as a torch.distributed backend, for DistributedDataParallel users.

    import trainrun.torch.distributed  # registers the backend "trainrun"
    torch.distributed.init_process_group("trainrun")

Run the script under trainrun (`trainrun -np 4 python3 train.py`): rank and
world size come from trainrun's world, and collectives run on trainrun's
core (shared memory on one host, its TCP mesh across hosts). Every op is
queued to one worker thread per process group, so it is asynchronous to
the caller and runs in the same order on every rank. The store torch
passes is not used. CPU tensors; send/recv are not supported yet.

new_group(): trainrun's process sets are made by every rank of the world
(torch's own rule for new_group), so this module wraps
torch.distributed.new_group to make the set on every rank before torch
calls the backend on the members.
"""
import functools

import torch.distributed as _dist
import torch.distributed.distributed_c10d as _c10d_module

from trainrun import _c10d

BACKEND = "trainrun"


def _create(options, _pg_options):
    ranks = list(options.global_ranks_in_group)
    if not ranks:
        return _c10d.world(options.group_rank, options.group_size)
    return _c10d.take_subset(ranks, options.group_rank, options.group_size)


def _uses_trainrun(backend):
    if backend is None:
        if not _dist.is_initialized():
            return False
        backend = _dist.get_backend()
    return str(backend).lower() == BACKEND


def _world_group():
    """The default group when it is trainrun's, else None (the core's world is used)."""
    if not _dist.is_initialized():
        return None
    group = _c10d_module._get_default_group()
    return group if isinstance(group, _c10d.ProcessGroupTrainrun) else None


def _wrap_new_group(new_group):
    @functools.wraps(new_group)
    def wrapped(ranks=None, *args, **kwargs):
        backend = kwargs.get("backend", args[1] if len(args) > 1 else None)
        if _uses_trainrun(backend) and _dist.is_initialized():
            members = sorted(ranks) if ranks is not None else list(range(_dist.get_world_size()))
            _c10d.prepare_subset(_world_group(), members)
        return new_group(ranks, *args, **kwargs)

    wrapped._trainrun_wrapped = True
    return wrapped


def _register():
    if BACKEND.upper() not in _dist.Backend._plugins:
        _dist.Backend.register_backend(BACKEND, _create, extended_api=True)
    if not getattr(_c10d_module.new_group, "_trainrun_wrapped", False):
        wrapped = _wrap_new_group(_c10d_module.new_group)
        _c10d_module.new_group = wrapped
        _dist.new_group = wrapped


_register()
