"""trainrun as a torch.distributed backend, for DistributedDataParallel users.

    import trainrun.torch.distributed  # registers the backend "trainrun"
    torch.distributed.init_process_group("trainrun")

Run the script under trainrun (`trainrun -np 4 python3 train.py`): rank and
world size come from trainrun's world, and collectives run on trainrun's
core (shared memory on one host, its TCP mesh across hosts; CUDA tensors
through NCCL when every rank can run it, else staged through host memory).
Every op is queued to one worker thread per process group, so it is
asynchronous to the caller and runs in the same order on every rank; on
CUDA tensors it starts after the work the caller's current stream had
queued, and its Work completes when the tensors are final. The store torch
passes is not used. send/recv take CPU tensors. The group's `timeout`
(init_process_group, new_group) bounds every op: past it the op fails and
the group is aborted, as with Gloo and NCCL.

torch 1.13 (Debian 12) and torch 2.x: in 2.x the backend is registered for
the cpu and cuda device types, and torch's ProcessGroup wraps it.

new_group(): trainrun's process sets are made by every rank of the world
(torch's own rule for new_group), so this module wraps
torch.distributed.new_group to make the set on every rank before torch
calls the backend on the members. DDP's gradient buckets are allocated in
trainrun's shared-memory heap when its group is trainrun's (torch.distributed
.Reducer is wrapped for that), so that an allreduce on one host reads them in
place.
"""
import functools
import inspect

import torch

import torch.distributed as _dist
import torch.distributed.distributed_c10d as _c10d_module

try:
    import trainrun._c10d as _c10d
except ModuleNotFoundError as _missing:  # not built; a module that fails to load says why itself
    if _missing.name != "trainrun._c10d":
        raise
    raise ImportError(
        "this trainrun was built without torch support (no trainrun._c10d, the torch.distributed backend): "
        "reinstall it with `pip install --no-build-isolation .` where torch imports and LibTorch with "
        "libtorch_python is found (Debian: python3-torch libtorch-dev), or build it with meson -Dc10d=enabled"
    ) from None

BACKEND = "trainrun"


def _create(options, _pg_options):
    ranks = list(options.global_ranks_in_group)
    if not ranks:
        return _c10d.world(options.store, options.group_rank, options.group_size, options.timeout)
    return _c10d.take_subset(ranks, options.group_rank, options.group_size, options.timeout)


def _uses_trainrun(backend):
    if backend is None:
        if not _dist.is_initialized():
            return False
        backend = _dist.get_backend()
    return str(backend).lower() == BACKEND


def _trainrun_backend(group):
    """`group` as trainrun's backend object, or None when it is another's.

    torch 1.13's group is the backend itself; torch 2.x's wraps one per device type."""
    if isinstance(group, _c10d.ProcessGroupTrainrun):
        return group
    try:
        backend = group._get_backend(torch.device("cpu"))
    except (AttributeError, RuntimeError):
        return None
    return backend if isinstance(backend, _c10d.ProcessGroupTrainrun) else None


def _world_group():
    """The default group's backend when it is trainrun's, else None (the core's world is used)."""
    if not _dist.is_initialized():
        return None
    return _trainrun_backend(_c10d_module._get_default_group())


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


def _heap_reducer(reducer):
    """torch's Reducer (DDP's gradient buckets) with its buckets, when its
    group is trainrun's, in the heap that group's shared-memory allreduce
    reads in place (no copy into the transport's segment and out)."""

    class Reducer(reducer):
        def __init__(self, *args, **kwargs):
            group = kwargs.get("process_group", args[3] if len(args) > 3 else None)
            self._trainrun_group = None if group is None else _trainrun_backend(group)
            with _c10d.HeapScope(self._trainrun_group):
                super().__init__(*args, **kwargs)

        def _rebuild_buckets(self):
            with _c10d.HeapScope(self._trainrun_group):
                return super()._rebuild_buckets()

    Reducer._trainrun_wrapped = True
    return Reducer


def _register():
    if BACKEND.upper() not in _dist.Backend._plugins:
        options = {"extended_api": True}
        if "devices" in inspect.signature(_dist.Backend.register_backend).parameters:
            options["devices"] = ["cpu", "cuda"]  # torch 2.x: one backend object serves both
        _dist.Backend.register_backend(BACKEND, _create, **options)
    if not getattr(_c10d_module.new_group, "_trainrun_wrapped", False):
        wrapped = _wrap_new_group(_c10d_module.new_group)
        _c10d_module.new_group = wrapped
        _dist.new_group = wrapped
    if not getattr(_dist.Reducer, "_trainrun_wrapped", False):
        _dist.Reducer = _heap_reducer(_dist.Reducer)


_register()
