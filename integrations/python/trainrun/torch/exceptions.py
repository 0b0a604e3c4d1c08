"""Horovod's exception names (horovod.common.exceptions), so that user
code's `except` clauses keep working: HorovodInternalError is what a failed
collective raises (trainrun.TrainrunError, a RuntimeError, and each of its
subclasses); HostsUpdatedInterrupt is raised by an elastic commit() when
workers joined or left."""
from trainrun._core import HostsUpdatedInterrupt, TrainrunError

HorovodInternalError = TrainrunError


class HorovodVersionMismatchError(ImportError):
    """Horovod raises it when a framework differs from the one it was built with; trainrun never does."""


__all__ = ['HorovodInternalError', 'HorovodVersionMismatchError', 'HostsUpdatedInterrupt']
