"""trainrun for Python: the C++ core's collectives for PyTorch and a
HorovodRunner-style launcher.

    import trainrun.torch as hvd          # drop-in for `import horovod.torch as hvd`
    trainrun.Runner(np=2).run(main, **kwargs)
    trainrun.run(main, args=(a,), np=2)   # horovod.run: every rank's return value

Errors of the core are trainrun.TrainrunError (a RuntimeError) or one of its
subclasses per code (MismatchError, TimeoutError, ...), with .code set.
Elastic jobs: trainrun.elastic (and trainrun.torch.elastic, as hvd.elastic).
"""
from trainrun._core import (  # noqa: F401
    BackendError,
    HostsUpdatedInterrupt,
    InternalError,
    InvalidArgumentError,
    IoError,
    MembershipChangedError,
    MismatchError,
    TimeoutError,
    TrainrunError,
    UnsupportedError,
    __version__,
)
from trainrun.horovod_run import run  # noqa: F401
from trainrun.runner import Runner, RunnerError  # noqa: F401
