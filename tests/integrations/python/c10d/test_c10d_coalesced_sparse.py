"""all_gather_coalesced on backend "trainrun", against torch's Gloo run beside
it in the same job (a gloo group over the same ranks) and against the result
computed here: what a user switching from "gloo" sees, values and errors."""

import pytest
import torch
import torch.distributed as dist

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
