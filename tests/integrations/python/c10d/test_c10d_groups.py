"""new_group on backend "trainrun" (trainrun's process sets), and ranks
outside a group going on with the world's collectives."""
import time
from datetime import timedelta

import pytest
import torch
import torch.distributed as dist


def test_new_group_of_two_and_of_all():
    rank, size = dist.get_rank(), dist.get_world_size()
    pair = dist.new_group([size - 1, 0])  # torch sorts the ranks
    everyone = dist.new_group()
    if rank in (0, size - 1):
        t = torch.tensor([float(rank)])
        dist.all_reduce(t, group=pair)
        assert t.item() == float(size - 1)
        assert dist.get_rank(pair) == (0 if rank == 0 else 1)
        objects = [None, None]
        dist.all_gather_object(objects, rank, group=pair)
        assert objects == [0, size - 1]
    else:
        assert pair == dist.GroupMember.NON_GROUP_MEMBER
    t = torch.ones(2)
    dist.all_reduce(t, group=everyone)
    assert torch.equal(t, torch.full((2,), float(size)))
    dist.broadcast(t, src=size - 1, group=everyone)
    dist.barrier()


def test_groups_run_beside_each_other():
    rank, size = dist.get_rank(), dist.get_world_size()
    even = dist.new_group([r for r in range(size) if r % 2 == 0])
    odd = dist.new_group([r for r in range(size) if r % 2 == 1])
    group = even if rank % 2 == 0 else odd
    members = [r for r in range(size) if r % 2 == rank % 2]
    t = torch.tensor([rank], dtype=torch.int64)
    work = dist.all_reduce(t, group=group, async_op=True)
    w = torch.ones(1)
    dist.all_reduce(w)  # the world's op while the set's runs
    work.wait()
    assert t.item() == sum(members)
    assert w.item() == size


def test_new_group_timeout_fails_an_op_nobody_waits_for():
    """new_group(timeout=): rank 1 never joins the pair's all_reduce, so rank
    0's fails after about 2 s, though nobody waits for it, and the pair is
    unusable after; the world's group goes on. Rank 1 is held by the world's
    all_reduce until rank 0 is done, never by a sleep."""
    rank, size = dist.get_rank(), dist.get_world_size()
    pair = dist.new_group([0, 1], timeout=timedelta(seconds=2))
    if rank == 0:
        start = time.monotonic()
        work = dist.all_reduce(torch.ones(3), group=pair, async_op=True)
        while not work.is_completed() and time.monotonic() - start < 30:
            time.sleep(0.05)
        elapsed = time.monotonic() - start
        assert work.is_completed(), 'still running after 30 s'
        timed_out = r"rank 0 \(.*\): allreduce: Timed out after 2 s \(the process group's timeout\) waiting for rank 1"
        with pytest.raises(RuntimeError, match=timed_out) as failure:
            work.wait()
        assert elapsed > 1.5, elapsed
        assert '\n' not in str(failure.value)
        with pytest.raises(RuntimeError, match=r'barrier: group unusable since an earlier op failed: .*[Tt]imed out'):
            dist.barrier(group=pair)
    t = torch.ones(2)
    dist.all_reduce(t)  # the world's group is another: in step
    assert torch.equal(t, torch.full((2,), float(size)))
