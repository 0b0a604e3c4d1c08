"""Horovod's build queries: which backends this build of trainrun has
(gloo_built, mpi_built, nccl_built) and which one the job runs on
(gloo_enabled, mpi_enabled)."""
from trainrun import _core


def _built():
    return dict(_core.built_backends())


def gloo_built():
    return 'gloo' in _built()


def mpi_built():
    return 'mpi' in _built()


def nccl_built():
    return 'nccl' in _built()


def cuda_built():
    return nccl_built()


def rocm_built():
    return False


def gloo_enabled():
    return _core.backend_name() == 'gloo'


def mpi_enabled():
    return _core.backend_name() == 'mpi'
