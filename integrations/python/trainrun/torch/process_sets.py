"""Horovod's process sets (horovod.common.process_sets) on trainrun: a
ProcessSet names some ranks of the job; each set has its own communicator
and engine in the core (Communicator::subset), so its collectives run
beside the job's. Sets are made collectively: every rank adds (and removes)
the same sets in the same order, members or not.

    hvd.init(process_sets=[hvd.ProcessSet([0, 1]), hvd.ProcessSet([2, 3])])
    evens = hvd.add_process_set([0, 2])   # after init: HOROVOD_DYNAMIC_PROCESS_SETS=1
    hvd.allreduce(t, process_set=evens)

Ranks passed to ops (broadcast's root_rank) stay the job's ranks, as in
Horovod; ProcessSet.rank() is this rank's place in the set.
"""
import os

from trainrun import _core

_DYNAMIC = 'HOROVOD_DYNAMIC_PROCESS_SETS'
_on_register = []  # called with each new set's id (mpi_ops resets its op name counters)


class ProcessSet:
    """Some ranks of the job that run collectives together. Pass it to
    hvd.init(process_sets=[...]) or hvd.add_process_set(); once registered,
    process_set_id is set."""
    process_set_id = None
    ranks = None
    mpi_comm = None

    def __init__(self, ranks_or_comm):
        try:
            ranks = sorted(ranks_or_comm)
        except TypeError:
            raise ValueError('ProcessSet should be initialized with a list of process ranks '
                             '(trainrun has no mpi4py communicators)') from None
        if any(not isinstance(r, int) for r in ranks):
            raise ValueError('ProcessSet should be initialized with a list of process ranks')
        self.ranks = ranks

    def _invalidate(self):
        self.process_set_id = None

    def size(self):
        """The number of ranks in the set, or None before it is registered."""
        if self.process_set_id is None:
            return None
        return _core.process_set_size(self.process_set_id)

    def rank(self):
        """This rank's place in the set, or None before it is registered;
        ValueError when this rank is not in it."""
        if self.process_set_id is None:
            return None
        return _core.process_set_rank(self.process_set_id)

    def included(self):
        """Whether this rank is in the set (None without ranks)."""
        if self.ranks is None:
            return None
        return _core.rank() in self.ranks

    def __str__(self):
        return f'ProcessSet(process_set_id={self.process_set_id}, ranks={self.ranks}, mpi_comm=None)'


global_process_set = ProcessSet([])
global_process_set.process_set_id = 0


def _dynamic():
    return os.environ.get(_DYNAMIC, '0') not in ('', '0')


def _init_process_sets(process_sets):
    """Registers hvd.init()'s sets (after the core started): duplicates in
    the list are a ValueError before anything is made."""
    global_process_set.ranks = list(range(_core.size()))
    seen = {tuple(global_process_set.ranks)}
    for ps in process_sets:
        if not isinstance(ps, ProcessSet):
            raise ValueError(f'process_sets must hold hvd.ProcessSet objects, not {type(ps).__name__}')
        if tuple(ps.ranks) in seen:
            raise ValueError(f'Attempted to add a duplicate process set: {ps}')
        seen.add(tuple(ps.ranks))
    for ps in process_sets:
        ps.process_set_id = _register(ps)


def _register(process_set):
    process_set_id = _core.add_process_set(process_set.ranks)
    if process_set_id is None:
        raise ValueError(f'Attempted to add a duplicate process set: {process_set}')
    for hook in _on_register:
        hook(process_set_id)
    return process_set_id


def _check_ready(verb):
    if not _core.is_initialized():
        raise ValueError('Horovod has not been initialized; use hvd.init().')
    if not _dynamic():
        raise ValueError(f'Set {_DYNAMIC}=1 to allow {verb} process sets after Horovod initialization.')


def add_process_set(process_set):
    """Adds a set after hvd.init() (collective: every rank adds the same
    sets in the same order) and returns it, registered. Needs
    HOROVOD_DYNAMIC_PROCESS_SETS=1; a set of the same ranks must not exist."""
    if not isinstance(process_set, ProcessSet):
        process_set = ProcessSet(process_set)
    _check_ready('adding')
    process_set.process_set_id = _register(process_set)
    return process_set


def remove_process_set(process_set):
    """Removes a set added before (collective over its members, and every
    rank calls it) and returns whether it existed; the object is invalidated.
    The job's set (global_process_set) cannot be removed."""
    process_set_id = process_set.process_set_id
    if process_set_id is None or process_set_id == 0:
        return False
    _check_ready('removing')
    process_set._invalidate()
    return _core.remove_process_set(process_set_id)


def _set_id(process_set):
    """The core's id for an op's process_set= argument (None: the job)."""
    if process_set is None:
        return 0
    if not isinstance(process_set, ProcessSet):
        raise ValueError(f'process_set must be an hvd.ProcessSet, not {type(process_set).__name__}')
    if process_set.process_set_id is None:
        raise ValueError(f'{process_set} is not registered: pass it to hvd.init(process_sets=...) '
                         'or hvd.add_process_set() first')
    return process_set.process_set_id


def _set_root(process_set, root_rank, op='Broadcast'):
    """A job rank (Horovod's root_rank) as the set numbers it."""
    process_set_id = _set_id(process_set)
    if process_set_id == 0:
        return root_rank
    ranks = _core.process_set_ranks(process_set_id)
    if root_rank not in ranks:
        raise ValueError(f'{op}: root rank {root_rank} is not in the process set {ranks}')
    return ranks.index(root_rank)


def _set_size(process_set):
    return _core.process_set_size(_set_id(process_set))


def _set_rank(process_set):
    """This rank's place in the set (the job's rank without a set)."""
    process_set_id = _set_id(process_set)
    return _core.rank() if process_set_id == 0 else _core.process_set_rank(process_set_id)
