"""all_gather_coalesced and the all_reduce of sparse (COO) tensors on backend
"trainrun", each against torch's Gloo run beside it in the same job (a gloo
group over the same ranks) and against the result computed here: what a
user switching from "gloo" sees, values and errors."""
import time
from datetime import timedelta

import pytest
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel

# torch 1.13 warns that all_gather_coalesced will be deprecated.
pytestmark = pytest.mark.filterwarnings('ignore::UserWarning')


@pytest.fixture(scope='module')
def gloo():
    """Gloo over every rank, beside the default group (torch's store)."""
    group = dist.new_group(backend='gloo')
    yield group
    dist.destroy_process_group(group)


def rank_size():
    return dist.get_rank(), dist.get_world_size()


def in_step():
    """The group still runs collectives, in step on every rank."""
    size = dist.get_world_size()
    t = torch.ones(3)
    dist.all_reduce(t)
    assert torch.equal(t, torch.full((3,), float(size)))


# all_gather_coalesced


def coalesced_inputs(r, dtype):
    """Rank r's list: tensors of 1, 4 and 27 elements and an empty one, each a function of r."""
    return [torch.full((1,), r + 1).to(dtype), (torch.arange(4).view(2, 2) + 10 * r).to(dtype), torch.zeros(0, dtype=dtype),
            (torch.arange(27).view(3, 3, 3) % 7 + r).to(dtype)]


def outputs_like(inputs, size, fill=-1):
    return [[torch.full_like(t, fill) for t in inputs] for _ in range(size)]


@pytest.mark.parametrize('dtype', [torch.float32, torch.float64, torch.int64, torch.int32, torch.uint8, torch.bool])
def test_all_gather_coalesced_matches_gloo(dtype, gloo):
    rank, size = rank_size()
    inputs = coalesced_inputs(rank, dtype)
    got = outputs_like(inputs, size)
    dist.all_gather_coalesced(got, inputs)
    reference = outputs_like(inputs, size)
    if dtype == torch.bool:  # Gloo has no bool: "Invalid scalar type"
        reference = [coalesced_inputs(r, dtype) for r in range(size)]
    else:
        dist.all_gather_coalesced(reference, inputs, group=gloo)
    for r in range(size):
        for mine, glo, expected in zip(got[r], reference[r], coalesced_inputs(r, dtype)):
            assert torch.equal(mine, expected), (r, mine, expected)
            assert torch.equal(mine, glo)


def test_all_gather_coalesced_complex_and_views(gloo):
    """Complex tensors (torch passes real views) and outputs that are not
    contiguous (columns of one tensor) or have their own shape."""
    rank, size = rank_size()
    inputs = [torch.tensor([1 + 1j, rank * 1j], dtype=torch.complex64), torch.full((3,), float(rank))]
    outputs, reference = [], []
    for _ in range(size):
        outputs.append([torch.zeros(2, dtype=torch.complex64), torch.zeros(3, 2)[:, 1]])
        reference.append([torch.zeros(2, dtype=torch.complex64), torch.zeros(3)])
    dist.all_gather_coalesced(outputs, inputs)
    dist.all_gather_coalesced(reference, inputs, group=gloo)
    for r in range(size):
        assert torch.equal(outputs[r][0], torch.tensor([1 + 1j, r * 1j], dtype=torch.complex64))
        assert torch.equal(outputs[r][1], torch.full((3,), float(r)))
        assert all(torch.equal(a, b) for a, b in zip(outputs[r], reference[r]))


def test_all_gather_coalesced_group_and_async():
    """On a set of two, asynchronously, in order with the world's ops."""
    rank, size = rank_size()
    pair = dist.new_group([0, 1])
    if rank in (0, 1):
        outputs = [[torch.zeros(2), torch.zeros(1)] for _ in range(2)]
        # torch 1.13 returns the Work's future here, not the Work.
        future = dist.all_gather_coalesced(outputs, [torch.full((2,), rank + 0.5), torch.full((1,), 10.0 * rank)],
                                           group=pair, async_op=True)
        in_step()
        assert len(future.wait()) == 4  # every output tensor
        for r in range(2):
            assert torch.equal(outputs[r][0], torch.full((2,), r + 0.5))
            assert torch.equal(outputs[r][1], torch.full((1,), 10.0 * r))
    else:
        in_step()
    dist.barrier()


def test_all_gather_coalesced_ranks_with_their_own_sizes():
    """Unlike Gloo, which needs every output list shaped as the inputs, a
    rank's list may have its own sizes (as all_gather's tensors may): rank r
    sends r + 1 elements and a pair; output list r is shaped for it."""
    rank, size = rank_size()
    inputs = [torch.full((rank + 1,), float(rank)), torch.full((2,), -float(rank))]
    outputs = [[torch.zeros(r + 1), torch.zeros(2)] for r in range(size)]
    dist.all_gather_coalesced(outputs, inputs)
    for r in range(size):
        assert torch.equal(outputs[r][0], torch.full((r + 1,), float(r)))
        assert torch.equal(outputs[r][1], torch.full((2,), -float(r)))


def test_all_gather_coalesced_refusals_name_rank_and_op():
    """Found on the caller's thread, before anything moved: the group goes on."""
    rank, size = rank_size()
    who = rf'rank {rank} \(.*\): allgather_coalesced: '
    inputs = [torch.ones(2), torch.ones(3)]
    with pytest.raises(RuntimeError, match=who + rf'needs {size} output lists \(one per rank\), got {size + 1}'):
        dist.all_gather_coalesced(outputs_like(inputs, size + 1), inputs)
    bad = outputs_like(inputs, size)
    bad[size - 1] = bad[size - 1][:1]
    with pytest.raises(RuntimeError, match=who + rf'output list {size - 1} has 1 tensors, the input list 2'):
        dist.all_gather_coalesced(bad, inputs)
    bad = outputs_like(inputs, size)
    bad[rank][1] = torch.zeros(4)
    with pytest.raises(RuntimeError, match=who + rf"output list {rank}'s tensor 1 \(this rank's\) has 4 elements, "
                                                r'input tensor 1 3'):
        dist.all_gather_coalesced(bad, inputs)
    with pytest.raises(RuntimeError, match=who + r"output list 0's tensor 0 must have the inputs' dtype"):
        dist.all_gather_coalesced([[torch.zeros(2, dtype=torch.int64), torch.zeros(3, dtype=torch.int64)]] * size,
                                  inputs)
    bad = outputs_like(inputs, size)
    bad[0][1] = torch.zeros(1).expand(3)
    with pytest.raises(RuntimeError, match=who + r"output list 0's tensor 1 is expanded"):
        dist.all_gather_coalesced(bad, inputs)
    with pytest.raises(RuntimeError, match=who + 'no input tensors'):
        dist.all_gather_coalesced([[] for _ in range(size)], [])
    in_step()


# all_reduce of sparse tensors


def sparse_case(r, dtype, case):
    """Rank r's sparse tensor for `case`."""
    if case == 'overlapping':  # rank r sets (r % 4, 1) and shares (2, 0) with every rank
        return torch.sparse_coo_tensor(torch.tensor([[r % 4, 2], [1, 0]]), torch.tensor([r + 1, 5]).to(dtype), (4, 3))
    if case == 'uncoalesced':  # index 1 twice on every rank
        return torch.sparse_coo_tensor(torch.tensor([[1, 3, 1]]), torch.tensor([1, r, 2]).to(dtype), (5,))
    if case == 'hybrid':  # one sparse dimension, rows of 2 (nn.Embedding's gradient)
        return torch.sparse_coo_tensor(torch.tensor([[r, 0]]), (torch.arange(4).view(2, 2) + r).to(dtype), (6, 2))
    assert case == 'empty_on_rank_0'
    nnz = 0 if r == 0 else r
    return torch.sparse_coo_tensor(torch.arange(nnz).view(1, nnz), torch.ones(nnz, 3).to(dtype), (4, 3))


@pytest.mark.parametrize('case', ['overlapping', 'uncoalesced', 'hybrid', 'empty_on_rank_0'])
@pytest.mark.parametrize('dtype', [torch.float32, torch.float64, torch.int64, torch.int32, torch.uint8])
def test_sparse_all_reduce_matches_gloo(dtype, case, gloo):
    """The coalesced sum of every rank's tensor, as Gloo gives it: the same
    indices and values, the tensor's contents replaced."""
    rank, size = rank_size()
    t = sparse_case(rank, dtype, case)
    reference = sparse_case(rank, dtype, case)
    dist.all_reduce(t)
    dist.all_reduce(reference, group=gloo)
    expected = sum(sparse_case(r, torch.float64, case).to_dense() for r in range(size)).to(dtype)
    assert t.is_sparse and t.is_coalesced() and t.dtype == dtype
    assert torch.equal(t.to_dense(), expected)
    assert torch.equal(t._indices(), reference._indices()) and torch.equal(t._values(), reference._values())


def test_sparse_all_reduce_async_future_and_a_tensor_that_requires_grad():
    """The Work's future carries the summed tensor (DDP's sparse buckets read
    it). A tensor that requires grad takes the result too (Gloo refuses
    it: "a leaf Variable that requires grad is being used in an in-place
    operation")."""
    rank, size = rank_size()
    t = torch.sparse_coo_tensor(torch.tensor([[rank, size]]), torch.ones(2), (size + 1,), requires_grad=True)
    work = dist.all_reduce(t, async_op=True)
    [result] = work.get_future().wait()
    assert result is t or torch.equal(result.to_dense(), t.to_dense())
    assert torch.equal(t.detach().to_dense(), torch.cat([torch.ones(size), torch.full((1,), float(size))]))


@pytest.mark.parametrize('op', ['MAX', 'MIN', 'PRODUCT', 'AVG', 'BOR'])
def test_sparse_all_reduce_other_ops_are_refused_as_gloo_does(op, gloo):
    rank, size = rank_size()
    t = torch.ones(3, dtype=torch.int64).to_sparse()
    with pytest.raises(RuntimeError, match=rf'rank {rank} \(.*\): allreduce: unsupported reduction operation {op} '
                                           r'\(allreduce of sparse tensors only works with ReduceOp.SUM\)'):
        dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
    with pytest.raises(RuntimeError, match=r'unsupported reduction operation \(allreduce of sparse tensors only '
                                           r'works with ReduceOp.SUM\)'):
        dist.all_reduce(t, op=getattr(dist.ReduceOp, op), group=gloo)
    in_step()


def test_sparse_tensors_that_disagree_fail_on_every_rank_naming_both():
    """Gloo says "Sparse dimensions do not match"; here every rank names the
    first rank whose tensor differs from rank 0's and both tensors, before
    any index or value moved, so the group goes on."""
    rank, size = rank_size()
    t = torch.sparse_coo_tensor(torch.tensor([[0]]), torch.ones(1), (4 if rank == 1 else 3,))
    disagree = r"the ranks' sparse tensors disagree: rank 0's is Float \[3\] with 1 sparse dimension, rank 1's "
    with pytest.raises(RuntimeError, match=rf'rank {rank} \(.*\): allreduce: {disagree}Float \[4\] with 1 sparse '
                                           r'dimension \(no index or value was sent\)'):
        dist.all_reduce(t)
    t = torch.sparse_coo_tensor(torch.tensor([[0]]), torch.ones(1, dtype=torch.float64 if rank == 1 else torch.float32),
                                (3,))
    with pytest.raises(RuntimeError, match=rf"allreduce: {disagree}Double \[3\] with 1 sparse dimension"):
        dist.all_reduce(t)
    t = torch.sparse_coo_tensor(torch.zeros(2 if rank == 1 else 1, 1, dtype=torch.int64), torch.ones(1, *(
        [] if rank == 1 else [3])), (3, 3))
    with pytest.raises(RuntimeError, match=r"rank 0's is Float \[3, 3\] with 1 sparse dimension, rank 1's Float "
                                           r'\[3, 3\] with 2 sparse dimensions'):
        dist.all_reduce(t)
    in_step()


def test_sparse_dtypes_torch_cannot_add_fail_alike_and_the_group_goes_on(gloo):
    """torch 1.13 adds no Half, BFloat16 or Bool sparse tensors on the CPU:
    the op fails on every rank with torch's message, as on Gloo."""
    rank, size = rank_size()
    t = torch.ones(3, dtype=torch.float16).to_sparse()
    with pytest.raises(RuntimeError, match=rf"rank {rank} \(.*\): allreduce: torch could not sum the gathered sparse "
                                           r"tensors: \"cadd_sparse\" not implemented for 'Half'$"):
        dist.all_reduce(t)
    with pytest.raises(RuntimeError, match=r"\"cadd_sparse\" not implemented for 'Half'"):
        dist.all_reduce(t, group=gloo)
    in_step()


def test_sparse_tensors_in_other_ops_are_refused():
    rank, size = rank_size()
    t = torch.ones(2).to_sparse()
    with pytest.raises(RuntimeError, match=rf'rank {rank} \(.*\): broadcast: sparse tensors are not supported by '
                                           r'backend trainrun in this op \(all_reduce with ReduceOp.SUM takes them\)'):
        dist.broadcast(t, src=0)
    with pytest.raises(RuntimeError, match=r'allreduce_coalesced: sparse tensors are not supported'):
        dist.all_reduce_coalesced([t, t])
    csr = torch.eye(2).to_sparse_csr()
    with pytest.raises(RuntimeError, match=rf'rank {rank} \(.*\): allreduce: tensors of layout SparseCsr are not '
                                           'supported by backend trainrun'):
        dist.all_reduce(csr)
    in_step()


def test_timeout_bounds_both_ops():
    """new_group(timeout=): rank 1 joins neither op, so rank 0's fail after
    about 2 s each, naming the op (each on a pair of its own: a timeout
    leaves its group unusable)."""
    rank, size = rank_size()
    pairs = [dist.new_group([0, 1], timeout=timedelta(seconds=2)) for _ in range(2)]
    if rank == 0:
        works = {'allgather_coalesced': dist.all_gather_coalesced([[torch.zeros(2)], [torch.zeros(2)]], [torch.ones(2)],
                                                                  group=pairs[0], async_op=True),
                 'allreduce': dist.all_reduce(torch.ones(3).to_sparse(), group=pairs[1], async_op=True)}
        start = time.monotonic()
        for op, work in works.items():
            with pytest.raises(RuntimeError, match=rf"rank 0 \(.*\): {op}: Timed out after 2 s \(the process "
                                                   r"group's timeout\) waiting for rank 1"):
                work.wait()
        assert 1.5 < time.monotonic() - start < 30
    in_step()  # the world's group is another


# DistributedDataParallel with sparse gradients


class Bag(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.embedding = nn.Embedding(20, 4, sparse=True)
        self.linear = nn.Linear(4, 2)

    def forward(self, ids):
        return self.linear(self.embedding(ids).sum(1))


def train_bag(group):
    rank, size = rank_size()
    ddp = DistributedDataParallel(Bag(), process_group=group)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.5)
    g = torch.Generator().manual_seed(rank + 1)
    for _ in range(3):
        opt.zero_grad()
        ids = torch.randint(0, 20, (5, 3), generator=g)
        ddp(ids).square().mean().backward()
        opt.step()
    return [p.detach().clone() for p in ddp.module.parameters()]


def test_ddp_with_a_sparse_embedding_matches_gloo(gloo):
    """nn.Embedding(sparse=True): DDP allreduces its sparse gradient on its
    own; the parameters after training are Gloo's."""
    got = train_bag(None)
    reference = train_bag(gloo)
    for a, b in zip(got, reference):
        assert torch.allclose(a, b, atol=1e-6), (a - b).abs().max()
    changed = got[0] != Bag().embedding.weight.detach()
    assert changed.any()  # the embedding trained
