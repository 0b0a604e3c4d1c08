"""Every op x dtype x reduce op against a torch float64 reference computed
from every rank's (deterministic) input; in place and not; async order."""
import random

import pytest
import torch

import trainrun
import trainrun.torch as hvd

DTYPES = [torch.uint8, torch.int8, torch.int32, torch.int64, torch.float16, torch.bfloat16, torch.float32,
          torch.float64]
OPS = {'Sum': hvd.Sum, 'Average': hvd.Average, 'Min': hvd.Min, 'Max': hvd.Max, 'Product': hvd.Product}


def rank_input(rank, dtype, rows=3):
    """Small positive values (products of a few ranks fit int8), different per rank."""
    values = (torch.arange(rows * 4).reshape(rows, 4) + rank) % 3 + 1
    return values.to(dtype)


def reference(op, dtype, n=None):
    inputs = torch.stack([rank_input(r, dtype).double() for r in range(n or hvd.size())])
    if op == 'Sum':
        out = inputs.sum(0)
    elif op == 'Average':
        out = inputs.sum(0) / inputs.shape[0]
        if not dtype.is_floating_point:
            out = torch.trunc(out)
    elif op == 'Min':
        out = inputs.min(0).values
    elif op == 'Max':
        out = inputs.max(0).values
    else:
        out = inputs.prod(0)
    return out


def assert_close(actual, expected, dtype):
    assert actual.dtype == dtype
    tolerance = {torch.float16: 1e-2, torch.bfloat16: 5e-2}.get(dtype, 1e-6)
    assert torch.allclose(actual.double(), expected.double(), rtol=tolerance, atol=tolerance), (actual, expected)


@pytest.mark.parametrize('dtype', DTYPES, ids=str)
@pytest.mark.parametrize('op', OPS)
def test_allreduce(op, dtype):
    mine = rank_input(hvd.rank(), dtype)
    out = hvd.allreduce(mine, op=OPS[op], name=f'ar.{op}.{dtype}')
    assert_close(out, reference(op, dtype), dtype)
    assert torch.equal(mine, rank_input(hvd.rank(), dtype))  # not in place
    in_place = rank_input(hvd.rank(), dtype)
    assert hvd.allreduce_(in_place, op=OPS[op], name=f'ar_.{op}.{dtype}') is in_place
    assert_close(in_place, reference(op, dtype), dtype)


@pytest.mark.parametrize('dtype', [torch.float32, torch.float64, torch.float16, torch.bfloat16], ids=str)
def test_allreduce_scale_factors(dtype):
    out = hvd.allreduce(rank_input(hvd.rank(), dtype), op=hvd.Sum, prescale_factor=0.5, postscale_factor=4.0)
    assert_close(out, reference('Sum', dtype) * 2.0, dtype)


@pytest.mark.parametrize('dtype', DTYPES, ids=str)
def test_grouped_allreduce(dtype):
    tensors = [rank_input(hvd.rank(), dtype, rows) for rows in (1, 2, 5)]
    outs = hvd.grouped_allreduce(tensors, op=hvd.Sum, name=f'group.{dtype}')
    for rows, out in zip((1, 2, 5), outs):
        expected = torch.stack([rank_input(r, dtype, rows).double() for r in range(hvd.size())]).sum(0)
        assert_close(out, expected, dtype)


@pytest.mark.parametrize('dtype', DTYPES, ids=str)
def test_allgather_first_dimension_differs(dtype):
    out = hvd.allgather(rank_input(hvd.rank(), dtype, rows=hvd.rank() + 1), name=f'ag.{dtype}')
    expected = torch.cat([rank_input(r, dtype, rows=r + 1) for r in range(hvd.size())])
    assert torch.equal(out, expected)


@pytest.mark.parametrize('dtype', DTYPES, ids=str)
def test_broadcast_from_every_root(dtype):
    for root in range(hvd.size()):
        mine = rank_input(hvd.rank(), dtype)
        assert torch.equal(hvd.broadcast(mine, root, name=f'bc.{root}.{dtype}'), rank_input(root, dtype))
        assert torch.equal(mine, rank_input(hvd.rank(), dtype))
        hvd.broadcast_(mine, root, name=f'bc_.{root}.{dtype}')
        assert torch.equal(mine, rank_input(root, dtype))


@pytest.mark.parametrize('dtype', DTYPES, ids=str)
def test_alltoall_with_splits(dtype):
    n, me = hvd.size(), hvd.rank()
    splits = [r + 1 for r in range(n)]  # rank r gets r+1 rows from everyone
    rows = torch.arange(sum(splits)).unsqueeze(1).repeat(1, 2) + 100 * me
    out, received = hvd.alltoall(rows.to(dtype) if dtype.is_floating_point else (rows % 120).to(dtype),
                                 splits=splits, name=f'a2a.{dtype}')
    assert received.tolist() == [me + 1] * n
    start = sum(splits[:me])
    expected = torch.cat([torch.arange(start, start + me + 1).unsqueeze(1).repeat(1, 2) + 100 * r
                          for r in range(n)])
    expected = expected.to(dtype) if dtype.is_floating_point else (expected % 120).to(dtype)
    assert torch.equal(out, expected)


def test_alltoall_even():
    n = hvd.size()
    out = hvd.alltoall(torch.full((n, 3), float(hvd.rank())), name='a2a.even')
    assert torch.equal(out, torch.arange(n, dtype=torch.float32).unsqueeze(1).repeat(1, 3))


@pytest.mark.parametrize('op', ['Sum', 'Average', 'Max'])
def test_reducescatter(op):
    n = hvd.size()
    rows = 2 * n + 1
    out = hvd.reducescatter(rank_input(hvd.rank(), torch.float32, rows), op=OPS[op], name=f'rs.{op}')
    inputs = torch.stack([rank_input(r, torch.float32, rows).double() for r in range(n)])
    full = {'Sum': inputs.sum(0), 'Average': inputs.mean(0), 'Max': inputs.max(0).values}[op]
    counts = [rows // n + (1 if r < rows % n else 0) for r in range(n)]
    start = sum(counts[:hvd.rank()])
    assert_close(out, full[start:start + counts[hvd.rank()]], torch.float32)


def test_async_handles_in_different_orders():
    names = [f'order.{i}' for i in range(8)]
    order = list(range(8))
    random.Random(hvd.rank()).shuffle(order)
    tensors = {i: torch.full((i + 1,), float(hvd.rank() + i)) for i in range(8)}
    handles = {i: hvd.allreduce_async(tensors[i], op=hvd.Sum, name=names[i]) for i in order}
    random.Random(hvd.rank() + 100).shuffle(order)
    for i in order:
        expected = sum(float(r + i) for r in range(hvd.size()))
        assert torch.equal(hvd.synchronize(handles[i]), torch.full((i + 1,), expected))


def test_shape_mismatch_raises_on_every_rank():
    with pytest.raises(trainrun.MismatchError) as info:
        hvd.allreduce(torch.zeros(hvd.rank() + 2), name='mismatched')
    message = str(info.value)
    assert info.value.code == 'Mismatch'
    assert 'mismatched' in message
    assert '[2]' in message and '[3]' in message, message
    # The engine goes on after a mismatch.
    assert hvd.allreduce(torch.ones(1), op=hvd.Sum, name='after.mismatch').item() == hvd.size()


def test_join_with_uneven_batches():
    batches = 2 + 2 * hvd.rank()  # the last rank has the most data
    for step in range(batches):
        out = hvd.allreduce(torch.ones(3), op=hvd.Sum, name=f'join.step.{step}')
        active = sum(1 for r in range(hvd.size()) if 2 + 2 * r > step)
        assert torch.equal(out, torch.full((3,), float(active)))
    assert hvd.join() == hvd.size() - 1


def test_barrier_and_objects():
    hvd.barrier()
    got = hvd.broadcast_object({'from': hvd.rank(), 'f': (lambda x: x + 1) if hvd.rank() == 0 else None}, 0)
    assert got['from'] == 0 and got['f'](1) == 2
    assert hvd.allgather_object(('rank', hvd.rank())) == [('rank', r) for r in range(hvd.size())]


def test_gradients_flow_through_collectives():
    x = torch.full((2, 3), float(hvd.rank() + 1), requires_grad=True)
    reduced = hvd.allreduce(x, op=hvd.Sum, name='grad.allreduce')
    gathered = hvd.allgather(x * 2, name='grad.allgather')
    broadcast = hvd.broadcast(x * 3, root_rank=0, name='grad.broadcast')
    (reduced.sum() + gathered.sum() + broadcast.sum()).backward()
    n = hvd.size()
    # Sum's gradient is the sum of every rank's upstream (n); allgather's and
    # broadcast's average it over the ranks, as Horovod's do: 2, and 3 to the root only.
    expected = n + 2 + (3 if hvd.rank() == 0 else 0)
    assert torch.equal(x.grad, torch.full((2, 3), float(expected)))
