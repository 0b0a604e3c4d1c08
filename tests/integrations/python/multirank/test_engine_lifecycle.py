"""The engine's life as a Horovod user sees it (issue 25): op names held
until their handle is synchronized. Horovod's whole test file runs in one
job, so what one test leaves behind must not break the next."""
import re
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


def _restart():
    hvd.shutdown()
    hvd.init()


def test_a_dead_engine_names_its_cause_and_shutdown_then_init_revives_it(monkeypatch):
    # Each rank waits on an op no peer submits: the stall shutdown stops the
    # engine. Horovod's test file goes on in the same job after such a test.
    monkeypatch.setenv('TRAINRUN_STALL_WARNING', '1')
    monkeypatch.setenv('TRAINRUN_STALL_SHUTDOWN', '2')
    _restart()
    try:
        with pytest.raises(TimeoutError, match=f"'allreduce.only_on_{hvd.rank()}'"):
            hvd.allreduce(torch.ones(2), name=f'only_on_{hvd.rank()}')
        hvd.init()  # on the dead engine: the next op says why it is dead
        with pytest.raises(TimeoutError, match=r'stall: an op waited more than 2 s \(TRAINRUN_STALL_SHUTDOWN\)'):
            hvd.allreduce(torch.ones(2), name='on_a_dead_engine')
        _restart()
        assert hvd.allreduce(torch.ones(2), name='revived', op=hvd.Sum).tolist() == [hvd.size()] * 2
        assert hvd.allreduce(torch.ones(2), op=hvd.Sum).tolist() == [hvd.size()] * 2  # unnamed ops agree too
    finally:
        monkeypatch.undo()
        _restart()


@pytest.mark.parametrize('op', ['allgather', 'broadcast'])
def test_unnamed_ops_fail_on_every_rank_while_each_rank_in_turn_has_joined(op):
    # The rank that joins makes one unnamed op fewer than its peers, so from
    # the second round on (np >= 3) the ranks' counted names differ: the op
    # must fail at once, not wait for a name no peer will submit. The error
    # names the lowest joined rank: the round's joiner, or a peer whose op
    # failed first and joined already (a slow rank sees both joined).
    t = torch.ones(3)
    for joiner in range(hvd.size()):
        if hvd.rank() != joiner:
            root = (joiner + 1) % hvd.size()
            with pytest.raises(RuntimeError, match=r': rank \d+( \(the root\))? has joined') as failure:
                hvd.allgather(t) if op == 'allgather' else hvd.broadcast(t, root)
            named = int(re.search(r': rank (\d+)( \(the root\))? has joined', str(failure.value)).group(1))
            assert named == joiner or (named < joiner and named != hvd.rank()), str(failure.value)
        assert hvd.join() in range(hvd.size())
    # After the last join, every rank agrees again.
    assert hvd.allgather(t, name='after_joins').numel() == 3 * hvd.size()
