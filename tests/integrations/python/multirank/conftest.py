"""Multi-rank tests: every rank of `trainrun --local -np N python3 -m pytest
tests/integrations/python/multirank` runs the same tests in the same order and asserts on
its own results. Collectives happen inside the tests, so a rank must never
skip one that its peers run."""
import pytest

import trainrun.torch as hvd


@pytest.fixture(scope='session', autouse=True)
def world():
    hvd.init()
    if hvd.size() < 2:
        pytest.exit('run these tests under trainrun with -np 2 or more', returncode=3)
    yield
    hvd.barrier()
