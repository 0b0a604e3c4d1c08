"""Horovod's build and job queries, answered as Horovod answers them:
which backends this build of trainrun has (gloo_built, mpi_built,
nccl_built -- NCCL's version number, 0 without it -- ccl_built, ddl_built,
cuda_built, rocm_built) and which one the job runs on (gloo_enabled,
mpi_enabled). trainrun never has oneCCL, DDL or ROCm: those say False."""
import re

from trainrun import _core


def _built():
    return dict(_core.built_backends())


def _version_number(version):
    """NCCL's own encoding of its version (NCCL_VERSION_CODE): 2.18.3 -> 21803."""
    found = re.search(r'(\d+)\.(\d+)\.(\d+)', str(version))  # 'NCCL 2.28.9 (/usr/...)'
    if not found:
        return 0
    major, minor, patch = (int(g) for g in found.groups())
    if (major, minor) >= (2, 9):
        return major * 10000 + minor * 100 + patch
    return major * 1000 + minor * 100 + patch


def gloo_built():
    return 'tcp' in _built()  # trainrun's tcp backend does what Horovod's Gloo does


def mpi_built():
    return 'mpi' in _built()


def nccl_built():
    """NCCL's version number (e.g. 21803 for 2.18.3), or 0 when trainrun was built without it."""
    version = _built().get('nccl')
    if version is None:
        return 0
    return _version_number(version) or 1


def ccl_built():
    return False


def ddl_built():
    return False


def cuda_built():
    return bool(nccl_built())


def rocm_built():
    return False


def gloo_enabled():
    return _core.backend_name() == 'tcp'


def mpi_enabled():
    return _core.backend_name() == 'mpi'
