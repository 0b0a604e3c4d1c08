"""The engine's life as a Horovod user sees it (issue 25): op names held
until their handle is synchronized. Horovod's whole test file runs in one
job, so what one test leaves behind must not break the next."""
import time

import pytest
import torch

import trainrun.torch as hvd


def _done(handle):
    # Poll until the op is surely complete on this rank; the engine may still
    # hold its name.
    deadline = time.monotonic() + 120
    while not hvd.poll(handle):
        assert time.monotonic() < deadline, 'the op never completed'
        time.sleep(0.01)


@pytest.mark.parametrize('op', ['allreduce', 'reducescatter'])
def test_a_name_stays_taken_until_its_handle_is_synchronized(op):
    # Horovod's duplicate-name tests submit a name twice in a row; if the
    # first op completed in between (every peer had submitted it), the name
    # used to be free again and the second submit went through on that rank.
    submit = getattr(hvd, op + '_async')
    t = torch.ones(hvd.size() * 2)
    handle = submit(t, name='held')
    _done(handle)
    with pytest.raises(ValueError, match=f"'{op}.held' is already in flight on this rank"):
        submit(t, name='held')
    assert hvd.synchronize(handle).sum().item() == 2 * (hvd.size() if op == 'allreduce' else 1)
    # Synchronized: the name is free again.
    assert hvd.synchronize(submit(t, name='held')).numel() > 0
