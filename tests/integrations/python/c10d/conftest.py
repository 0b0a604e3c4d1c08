"""Multi-rank tests of the torch.distributed backend "trainrun": every rank of
`trainrun --local -np N python3 -m pytest tests/integrations/python/c10d` runs the same
tests in the same order, through torch's own collectives API, and compares
with results computed in the test. A rank must never skip a collective its
peers run."""
import pytest
import torch.distributed as dist

import trainrun.torch.distributed  # noqa: F401  (registers the backend)


@pytest.fixture(scope='session', autouse=True)
def world():
    dist.init_process_group('trainrun')
    if dist.get_world_size() < 2:
        pytest.exit('run these tests under trainrun with -np 2 or more', returncode=3)
    yield
    dist.barrier()
