"""torch.distributed's point-to-point ops on backend "trainrun": send, recv
(from a rank and from any source), isend/irecv, batch_isend_irecv, in a
new_group and between collectives. Every rank runs every test."""
import pytest
import torch
import torch.distributed as dist


# Larger than a TCP socket's buffers on both ends (several MiB), so that a
# send that waited for its receiver would deadlock "both send first".
LARGE = 16 << 20


def rank_size():
    return dist.get_rank(), dist.get_world_size()


def payload(sender, n=7, dtype=torch.float32, tag=0):
    return (torch.arange(n) + 100 * sender + 10 * tag).to(dtype)


def test_send_recv_ring():
    rank, size = rank_size()
    right, left = (rank + 1) % size, (rank - 1) % size
    got = torch.zeros(7)
    if rank % 2 == 0:
        dist.send(payload(rank), right)
        assert dist.recv(got, left) == left
    else:
        assert dist.recv(got, left) == left
        dist.send(payload(rank), right)
    assert torch.equal(got, payload(left))


@pytest.mark.parametrize('dtype', [torch.uint8, torch.int64, torch.float16, torch.bfloat16, torch.float64, torch.bool])
def test_dtypes_and_non_contiguous(dtype):
    rank, size = rank_size()
    right, left = (rank + 1) % size, (rank - 1) % size
    into = torch.zeros(4, 6, dtype=dtype).t()  # not contiguous
    send = dist.isend(payload(rank, 24, dtype).view(6, 4), right)
    dist.recv(into, left)
    send.wait()
    assert torch.equal(into, payload(left, 24, dtype).view(6, 4))


def test_both_isend_large_first():
    """Every rank sends 64 MiB to its right and to its left before it receives."""
    rank, size = rank_size()
    right, left = (rank + 1) % size, (rank - 1) % size
    big = torch.full((LARGE,), float(rank))
    sends = [dist.isend(big, right), dist.isend(big + 0.5, left, tag=1)]
    from_left, from_right = torch.zeros(LARGE), torch.zeros(LARGE)
    recvs = [dist.irecv(from_left, left), dist.irecv(from_right, right, tag=1)]
    for w in sends + recvs:
        w.wait()
        assert w.is_completed()
    assert torch.all(from_left == left) and torch.all(from_right == right + 0.5)


def test_order_and_tags():
    rank, size = rank_size()
    if rank == 0:
        for tag in (3, 2):
            for i in range(5):
                dist.send(payload(i, tag=tag), 1, tag=tag)
    elif rank == 1:
        for tag in (2, 3):  # the other tag first: tags keep the messages apart
            for i in range(5):
                got = torch.zeros(7)
                dist.recv(got, 0, tag=tag)
                assert torch.equal(got, payload(i, tag=tag)), (tag, i)
    dist.barrier()


def test_recv_any_source_gives_sender():
    rank, size = rank_size()
    if rank == 0:
        senders = set()
        for _ in range(size - 1):
            got = torch.zeros(7)
            src = dist.recv(got, tag=5)  # src=None: any source
            assert torch.equal(got, payload(src))
            senders.add(src)
        assert senders == set(range(1, size))
        got = torch.zeros(7)
        w = dist.irecv(got, tag=6)
        w.wait()
        assert w._source_rank() == size - 1 and torch.equal(got, payload(size - 1))
    else:
        dist.send(payload(rank), 0, tag=5)
        if rank == size - 1:
            dist.send(payload(rank), 0, tag=6)
    dist.barrier()


def test_batch_isend_irecv_ring():
    rank, size = rank_size()
    right, left = (rank + 1) % size, (rank - 1) % size
    got = torch.zeros(7, dtype=torch.int32)
    ops = [dist.P2POp(dist.isend, payload(rank, dtype=torch.int32), right),
           dist.P2POp(dist.irecv, got, left)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    assert torch.equal(got, payload(left, dtype=torch.int32))


def test_interleaved_with_allreduce():
    """A receive posted before an allreduce does not hold up the allreduce."""
    rank, size = rank_size()
    right, left = (rank + 1) % size, (rank - 1) % size
    got = torch.zeros(7)
    pending = dist.irecv(got, left, tag=9)
    t = torch.ones(3)
    dist.all_reduce(t)
    assert torch.equal(t, torch.full((3,), float(size)))
    dist.send(payload(rank), right, tag=9)
    pending.wait()
    t = torch.ones(3)
    dist.all_reduce(t)
    assert torch.equal(got, payload(left)) and torch.equal(t, torch.full((3,), float(size)))


def test_in_new_group_ranks_are_group_ranks():
    rank, size = rank_size()
    members = list(range(size - 1, -1, -2))  # e.g. [2, 0] of 3, [1] of 2
    group = dist.new_group(sorted(members))
    if len(members) < 2 or rank not in members:
        dist.barrier()
        return
    group_rank = dist.get_rank(group)
    n = dist.get_world_size(group)
    got = torch.zeros(7)
    w = dist.isend(payload(rank), dst=sorted(members)[(group_rank + 1) % n], group=group)
    src = dist.recv(got, group=group)  # any source: torch maps the group rank back to a global one
    w.wait()
    assert src == sorted(members)[(group_rank - 1) % n] and torch.equal(got, payload(src))
    dist.barrier()


def test_size_and_dtype_mismatch_name_both_ranks():
    rank, size = rank_size()
    if rank == 0:
        dist.send(torch.zeros(5), 1, tag=11)
        dist.send(torch.zeros(4, dtype=torch.int32), 1, tag=12)
    elif rank == 1:
        with pytest.raises(RuntimeError, match=r'rank 1 \(.*\): recv: rank 0 sent 20 bytes of float32 with tag 11, '
                                               r'rank 1 receives 24 bytes of float32'):
            dist.recv(torch.zeros(6), 0, tag=11)
        with pytest.raises(RuntimeError, match=r'rank 0 sent 16 bytes of int32 with tag 12, rank 1 receives 16 bytes '
                                               r'of float32'):
            dist.recv(torch.zeros(4), 0, tag=12)
    dist.barrier()


def test_bad_peer_refused():
    rank, size = rank_size()
    with pytest.raises(RuntimeError, match=rf'rank {rank} .*recv: rank {size} is not a rank of this {size}-rank group'):
        dist.distributed_c10d._get_default_group().recv([torch.zeros(1)], size, 0)
