"""torch.distributed's collectives on backend "trainrun", each against the
result computed here from what every rank contributes (rank r's input is a
function of r)."""
import functools
import time
from datetime import timedelta

import pytest
import torch
import torch.distributed as dist

# torch 1.13 warns that _all_gather_base and friends are private: they are what it calls itself.
pytestmark = pytest.mark.filterwarnings('ignore::UserWarning')

DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16, torch.bfloat16,
          torch.float32, torch.float64]


def rank_size():
    return dist.get_rank(), dist.get_world_size()


def contribution(r, n=5, dtype=torch.float32):
    """Rank r's input: small positive values, exact in every dtype."""
    return (torch.arange(n) % 3 + r + 1).to(dtype)


def test_backend_name_and_world():
    rank, size = rank_size()
    assert dist.get_backend() == 'trainrun'
    assert 0 <= rank < size


@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('op', ['SUM', 'PRODUCT', 'MIN', 'MAX'])
def test_all_reduce(dtype, op):
    rank, size = rank_size()
    t = contribution(rank, dtype=dtype)
    dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
    inputs = torch.stack([contribution(r, dtype=torch.float64) for r in range(size)])
    expected = {'SUM': inputs.sum(0), 'PRODUCT': inputs.prod(0), 'MIN': inputs.min(0).values,
                'MAX': inputs.max(0).values}[op]
    assert torch.equal(t.to(torch.float64), expected.to(dtype).to(torch.float64))


def test_all_reduce_avg():
    rank, size = rank_size()
    t = contribution(rank, dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    expected = torch.stack([contribution(r, dtype=torch.float64) for r in range(size)]).mean(0)
    assert torch.allclose(t, expected)


@pytest.mark.parametrize('op', ['BAND', 'BOR', 'BXOR'])
@pytest.mark.parametrize('dtype', [torch.int32, torch.uint8, torch.int64])
def test_all_reduce_bitwise(op, dtype):
    rank, size = rank_size()
    t = torch.tensor([rank + 1, 0xF0 | rank, 7], dtype=dtype)
    dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
    fold = {'BAND': torch.bitwise_and, 'BOR': torch.bitwise_or, 'BXOR': torch.bitwise_xor}[op]
    expected = torch.tensor([1, 0xF0, 7], dtype=dtype)
    for r in range(1, size):
        expected = fold(expected, torch.tensor([r + 1, 0xF0 | r, 7], dtype=dtype))
    assert torch.equal(t, expected)


def test_all_reduce_bool():
    rank, size = rank_size()
    t = torch.tensor([True, rank == 0, False])
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    assert t.tolist() == [True, True, False]
    t = torch.tensor([True, rank == 0, False])
    dist.all_reduce(t, op=dist.ReduceOp.MIN)
    assert t.tolist() == [True, False, False]


def test_all_reduce_not_contiguous_and_empty():
    rank, size = rank_size()
    base = torch.zeros(4, 6)
    view = base[:, ::2]  # not contiguous
    view.fill_(rank + 1)
    dist.all_reduce(view)
    assert torch.equal(base[:, ::2], torch.full((4, 3), float(size * (size + 1) // 2)))
    assert torch.equal(base[:, 1::2], torch.zeros(4, 3))
    empty = torch.zeros(0)
    dist.all_reduce(empty)
    assert empty.numel() == 0


def test_all_reduce_coalesced():
    rank, size = rank_size()
    tensors = [torch.full((3,), float(rank)), torch.full((2, 2), float(rank * 2))]
    dist.all_reduce_coalesced(tensors)
    total = sum(range(size))
    assert torch.equal(tensors[0], torch.full((3,), float(total)))
    assert torch.equal(tensors[1], torch.full((2, 2), float(2 * total)))


def test_broadcast_every_root():
    rank, size = rank_size()
    for root in range(size):
        t = contribution(rank, 7, torch.int64)
        dist.broadcast(t, src=root)
        assert torch.equal(t, contribution(root, 7, torch.int64))


def test_all_gather_equal_and_unequal():
    rank, size = rank_size()
    outs = [torch.zeros(4) for _ in range(size)]
    dist.all_gather(outs, contribution(rank, 4))
    for r in range(size):
        assert torch.equal(outs[r], contribution(r, 4))
    outs = [torch.zeros(r + 1, dtype=torch.int32) for r in range(size)]
    dist.all_gather(outs, torch.full((rank + 1,), rank, dtype=torch.int32))
    for r in range(size):
        assert torch.equal(outs[r], torch.full((r + 1,), r, dtype=torch.int32))


def test_all_gather_base():
    rank, size = rank_size()
    out = torch.zeros(size * 3, dtype=torch.float64)
    dist._all_gather_base(out, contribution(rank, 3, torch.float64))
    assert torch.equal(out, torch.cat([contribution(r, 3, torch.float64) for r in range(size)]))


def test_reduce_scatter_and_base():
    rank, size = rank_size()
    inputs = [torch.full((2,), float(rank * 10 + j)) for j in range(size)]
    out = torch.zeros(2)
    dist.reduce_scatter(out, inputs)
    assert torch.equal(out, torch.full((2,), float(sum(r * 10 + rank for r in range(size)))))
    flat = torch.cat([torch.full((2,), float(rank * 10 + j)) for j in range(size)])
    out = torch.zeros(2)
    dist._reduce_scatter_base(out, flat)
    assert torch.equal(out, torch.full((2,), float(sum(r * 10 + rank for r in range(size)))))
    out = torch.zeros(2, dtype=torch.int32)
    dist.reduce_scatter(out, [t.to(torch.int32) for t in inputs], op=dist.ReduceOp.MAX)
    assert torch.equal(out, torch.full((2,), (size - 1) * 10 + rank, dtype=torch.int32))


def test_all_to_all_single_equal_and_splits():
    rank, size = rank_size()
    inp = torch.arange(size * 2, dtype=torch.float32) + 100 * rank
    out = torch.zeros(size * 2)
    dist.all_to_all_single(out, inp)
    assert torch.equal(out, torch.cat([torch.arange(rank * 2, rank * 2 + 2, dtype=torch.float32) + 100 * r
                                       for r in range(size)]))
    # Rank r sends (d + 1) rows of 3 to rank d, each row filled with 10 r + d.
    in_splits = [d + 1 for d in range(size)]
    inp = torch.cat([torch.full((d + 1, 3), float(10 * rank + d)) for d in range(size)])
    out_splits = [rank + 1] * size
    out = torch.zeros(sum(out_splits), 3)
    dist.all_to_all_single(out, inp, out_splits, in_splits)
    assert torch.equal(out, torch.cat([torch.full((rank + 1, 3), float(10 * s + rank)) for s in range(size)]))


def test_all_to_all_lists():
    rank, size = rank_size()
    inputs = [torch.full((d + 1,), rank * 10 + d, dtype=torch.int64) for d in range(size)]
    outputs = [torch.zeros(rank + 1, dtype=torch.int64) for _ in range(size)]
    dist.all_to_all(outputs, inputs)
    for s in range(size):
        assert torch.equal(outputs[s], torch.full((rank + 1,), s * 10 + rank, dtype=torch.int64))


def test_all_to_all_sizes_that_disagree_fail_on_every_rank_naming_both():
    """Rank 1 sends rank 0 five elements where rank 0 expects 4 (or 6): an
    error on every rank before anything moves, never a truncated or padded
    result; every rank found it before anything moved, so the group goes on."""
    rank, size = rank_size()
    in_splits = [5 if (rank == 1 and d == 0) else 1 for d in range(size)]
    out_splits = [4 if (rank == 0 and s == 1) else 1 for s in range(size)]
    out = torch.full((sum(out_splits),), -1.0)
    disagree = 'split sizes disagree: rank 1 sends 5 elements to rank 0, which expects'
    with pytest.raises(RuntimeError, match=rf'rank {rank} \(.*\): alltoall_base: {disagree} 4 '):
        dist.all_to_all_single(out, torch.ones(sum(in_splits)), out_splits, in_splits)
    assert torch.equal(out, torch.full((sum(out_splits),), -1.0))
    inputs = [torch.ones(5 if (rank == 1 and d == 0) else 1) for d in range(size)]
    outputs = [torch.zeros(6 if (rank == 0 and s == 1) else 1) for s in range(size)]
    with pytest.raises(RuntimeError, match=rf'rank {rank} \(.*\): alltoall: {disagree} 6 '):
        dist.all_to_all(outputs, inputs)
    t = torch.ones(3)
    dist.all_reduce(t)  # the group is still in step
    assert torch.equal(t, torch.full((3,), float(size)))


def test_gather_scatter_reduce_every_root():
    rank, size = rank_size()
    for root in range(size):
        outs = [torch.zeros(3) for _ in range(size)] if rank == root else None
        dist.gather(contribution(rank, 3), outs, dst=root)
        if rank == root:
            for r in range(size):
                assert torch.equal(outs[r], contribution(r, 3))
        pieces = [torch.full((2, 2), float(root * 10 + r)) for r in range(size)] if rank == root else None
        out = torch.zeros(2, 2)
        dist.scatter(out, pieces, src=root)
        assert torch.equal(out, torch.full((2, 2), float(root * 10 + rank)))
        t = contribution(rank, 4)
        dist.reduce(t, dst=root)
        expected = sum(contribution(r, 4) for r in range(size)) if rank == root else contribution(rank, 4)
        assert torch.equal(t, expected)


@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('op', ['SUM', 'PRODUCT', 'MIN', 'MAX', 'AVG', 'BOR'])
def test_reduce_every_root(dtype, op):
    """dist.reduce runs on the core's reduce (a bitwise op: the fold of an
    allgather): only the root's tensor changes."""
    rank, size = rank_size()
    if op == 'BOR' and dtype.is_floating_point:
        pytest.skip('bitwise ops take integers')
    inputs = [contribution(r, dtype=torch.int64 if op == 'BOR' else torch.float64) for r in range(size)]
    stacked = torch.stack(inputs)
    expected = {'SUM': lambda: stacked.sum(0), 'PRODUCT': lambda: stacked.prod(0), 'MIN': lambda: stacked.min(0).values,
                'MAX': lambda: stacked.max(0).values, 'BOR': lambda: functools.reduce(torch.bitwise_or, inputs),
                'AVG': lambda: stacked.mean(0) if dtype.is_floating_point else stacked.sum(0).div(
                    size, rounding_mode='trunc')}[op]()
    for root in range(size):
        t = contribution(rank, dtype=dtype)
        dist.reduce(t, dst=root, op=getattr(dist.ReduceOp, op))
        want = expected.to(dtype) if rank == root else contribution(rank, dtype=dtype)
        assert torch.allclose(t.to(torch.float64), want.to(torch.float64), rtol=1e-2), (root, t, want)


def test_reduce_not_contiguous_at_the_root():
    rank, size = rank_size()
    for root in range(size):
        base = torch.stack([contribution(rank, 4), torch.zeros(4)], dim=1)  # [4, 2]
        view = base[:, 0]  # stride 2
        dist.reduce(view, dst=root)
        want = sum(contribution(r, 4) for r in range(size)) if rank == root else contribution(rank, 4)
        assert torch.equal(view, want)
        assert torch.equal(base[:, 1], torch.zeros(4))


def test_barrier_and_objects():
    rank, size = rank_size()
    dist.barrier()
    objects = [None] * size
    dist.all_gather_object(objects, {'rank': rank})
    assert objects == [{'rank': r} for r in range(size)]
    box = [f'from {rank}']
    dist.broadcast_object_list(box, src=size - 1)
    assert box == [f'from {size - 1}']


def test_async_work_and_future():
    rank, size = rank_size()
    works = [dist.all_reduce(torch.full((1000,), float(i)), async_op=True) for i in range(20)]
    t = torch.ones(3)
    work = dist.all_reduce(t, async_op=True)
    future = work.get_future().then(lambda f: f.value()[0] * 2)
    assert torch.equal(future.wait(), torch.full((3,), 2.0 * size))
    assert work.wait()
    assert work.is_completed() and work.is_success()
    for w in works:
        w.wait()
        assert w.is_completed()


def test_refusals_name_rank_and_op():
    rank, size = rank_size()
    with pytest.raises(RuntimeError, match=rf'rank {rank} \(.*\): allreduce: ReduceOp BAND needs an integer'):
        dist.all_reduce(torch.ones(2), op=dist.ReduceOp.BAND)
    with pytest.raises(RuntimeError, match=rf'rank {rank} .*broadcast: root {size} is not a rank'):
        dist.distributed_c10d._get_default_group().broadcast(torch.ones(2), size)
    with pytest.raises(RuntimeError, match=rf'rank {rank} .*dtype ComplexFloat'):
        dist.distributed_c10d._get_default_group().allreduce([torch.ones(2, dtype=torch.complex64)])
    with pytest.raises(RuntimeError, match=rf'rank {rank} .*send: rank {rank} is this rank'):
        dist.send(torch.ones(1), dst=rank)
    # Sizes found wrong on the caller's thread, before anything moved.
    with pytest.raises(RuntimeError, match=rf'rank {rank} .*allgather: needs one list of {size} output tensors'):
        dist.all_gather([torch.zeros(2)] * (size + 1), torch.ones(2))
    with pytest.raises(RuntimeError, match=rf'_allgather_base: the output has 3 elements, not {size} x 2'):
        dist._all_gather_base(torch.zeros(3), torch.ones(2))
    with pytest.raises(RuntimeError, match=r'alltoall_base: input splits sum to 1, not dim 0'):
        dist.all_to_all_single(torch.zeros(size), torch.ones(size), input_split_sizes=[1] + [0] * (size - 1))
    t = torch.ones(2)
    dist.all_reduce(t)  # every rank is still in step
    assert torch.equal(t, torch.full((2,), float(size)))
    dist.barrier()


def test_complex_sum_as_real_view():
    rank, size = rank_size()
    t = torch.tensor([1 + 2j, rank * 1j], dtype=torch.complex64)
    dist.all_reduce(t)
    assert torch.allclose(t, torch.tensor([size * (1 + 2j), sum(range(size)) * 1j], dtype=torch.complex64))


def test_wait_with_a_timeout():
    rank, size = rank_size()
    if rank != 0:
        time.sleep(1.0)  # rank 0's op cannot finish before this
    t = torch.ones(4)
    work = dist.all_reduce(t, async_op=True)
    if rank == 0:
        with pytest.raises(RuntimeError, match='wait timed out after 50 ms'):
            work.wait(timeout=timedelta(milliseconds=50))
        assert not work.is_completed()
    assert work.wait()
    assert torch.equal(t, torch.full((4,), float(size)))


def expanded(value, n=4):
    """n positions that share one element (stride 0), as torch.ones(1).expand(n)."""
    return torch.full((1,), float(value)).expand(n)


def test_expanded_tensors_in_place_and_as_inputs():
    """Expanded (stride-0) tensors, which Gloo takes too: an input is read as
    its contiguous copy; in place (all_reduce, broadcast, reduce,
    all_reduce_coalesced) each shared element gets the result once."""
    rank, size = rank_size()
    total = float(sum(r + 1 for r in range(size)))
    t = expanded(rank + 1)
    dist.all_reduce(t)
    assert t.stride() == (0,) and torch.equal(t, torch.full((4,), total))
    rows = (torch.arange(3.0).view(3, 1) + rank).expand(3, 4)
    dist.all_reduce(rows)
    assert torch.equal(rows, (torch.arange(3.0).view(3, 1) * size + sum(range(size))).expand(3, 4))
    t = expanded(rank + 10)
    dist.broadcast(t, src=size - 1)
    assert torch.equal(t, torch.full((4,), float(size - 1 + 10)))
    t = expanded(rank + 1)
    dist.reduce(t, dst=0)
    assert torch.equal(t, torch.full((4,), total if rank == 0 else float(rank + 1)))
    pair = [expanded(rank + 1), torch.ones(2)]
    dist.all_reduce_coalesced(pair)
    assert torch.equal(pair[0], torch.full((4,), total)) and torch.equal(pair[1], torch.full((2,), float(size)))
    outs = [torch.zeros(4) for _ in range(size)]
    dist.all_gather(outs, expanded(rank))
    assert all(torch.equal(outs[r], torch.full((4,), float(r))) for r in range(size))
    out = torch.zeros(4 * size)
    dist._all_gather_base(out, expanded(rank))
    assert torch.equal(out, torch.arange(size).repeat_interleave(4).float())
    outs = [torch.zeros(4) for _ in range(size)] if rank == 0 else None
    dist.gather(expanded(rank), outs, dst=0)
    assert rank != 0 or all(torch.equal(outs[r], torch.full((4,), float(r))) for r in range(size))
    out = torch.zeros(4)
    dist.scatter(out, [expanded(r) for r in range(size)] if rank == 0 else None, src=0)
    assert torch.equal(out, torch.full((4,), float(rank)))
    out = torch.zeros(4)
    dist.reduce_scatter(out, [expanded(rank + 1) for _ in range(size)])
    assert torch.equal(out, torch.full((4,), total))
    out = torch.zeros(2 * size)
    dist.all_to_all_single(out, expanded(rank, 2 * size))
    assert torch.equal(out, torch.arange(size).repeat_interleave(2).float())


def test_expanded_send_and_recv():
    rank, size = rank_size()
    if rank == 0:
        dist.send(expanded(7), dst=1)
    elif rank == 1:
        got = torch.zeros(4)
        dist.recv(got, src=0)
        assert torch.equal(got, torch.full((4,), 7.0))
    dist.barrier()


def test_expanded_outputs_are_refused_and_the_group_goes_on():
    """An output every element of which gets its own value cannot be
    expanded: refused on the caller's thread before anything moved (Gloo
    refuses all_gather's and gather's, after the fact), so the group goes on."""
    rank, size = rank_size()
    shared = r'is expanded \(several of its elements share one memory location\), so it cannot take the result'
    with pytest.raises(RuntimeError, match=rf'rank {rank} \(.*\): allgather: output tensor 0 {shared}'):
        dist.all_gather([torch.zeros(1).expand(4) for _ in range(size)], torch.ones(4))
    with pytest.raises(RuntimeError, match=rf'_allgather_base: the output tensor {shared}'):
        dist._all_gather_base(torch.zeros(1).expand(4 * size), torch.ones(4))
    with pytest.raises(RuntimeError, match=rf'scatter: the output tensor {shared}'):
        dist.scatter(torch.zeros(1).expand(4), [torch.ones(4)] * size if rank == 0 else None, src=0)
    with pytest.raises(RuntimeError, match=rf'reduce_scatter: the output tensor {shared}'):
        dist.reduce_scatter(torch.zeros(1).expand(4), [torch.ones(4) for _ in range(size)])
    with pytest.raises(RuntimeError, match=rf'alltoall_base: the output tensor {shared}'):
        dist.all_to_all_single(torch.zeros(1).expand(2 * size), torch.ones(2 * size))
    with pytest.raises(RuntimeError, match=rf'recv: the output tensor {shared}'):
        dist.recv(torch.zeros(1).expand(4), src=(rank + 1) % size)
    t = torch.ones(3)
    dist.all_reduce(t)  # nothing was queued: the group is in step
    assert torch.equal(t, torch.full((3,), float(size)))
