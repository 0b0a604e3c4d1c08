"""Process sets as Horovod has them: static sets at init, dynamic ones
(HOROVOD_DYNAMIC_PROCESS_SETS=1), disjoint and overlapping, every op and
its async form with process_set=, the errors Horovod gives, and a
DistributedOptimizer per set. Every rank makes the same calls in the same
order; results are checked against values computed here from the ranks."""
import os

import pytest
import torch

import trainrun.torch as hvd


@pytest.fixture(autouse=True)
def dynamic(monkeypatch):
    monkeypatch.setenv('HOROVOD_DYNAMIC_PROCESS_SETS', '1')


@pytest.fixture
def even_odd():
    even = hvd.add_process_set([r for r in range(hvd.size()) if r % 2 == 0])
    odd = hvd.add_process_set([r for r in range(hvd.size()) if r % 2 == 1])
    yield even, odd
    hvd.remove_process_set(odd)
    hvd.remove_process_set(even)


def mine(*sets):
    return next(s for s in sets if hvd.rank() in s.ranks)


def test_static_sets_at_init_and_duplicates():
    size, rank = hvd.size(), hvd.rank()
    hvd.shutdown()
    tail = range(1, size) if rank == 0 else reversed(range(1, size))  # order does not matter
    with pytest.raises(ValueError, match='duplicate'):
        hvd.init(process_sets=[hvd.ProcessSet([0]), hvd.ProcessSet(tail), hvd.ProcessSet([0])])
    hvd.shutdown()
    first, rest = hvd.ProcessSet([0]), hvd.ProcessSet(range(1, size) if rank == 0 else reversed(range(1, size)))
    hvd.init(process_sets=[first, rest])
    assert hvd.global_process_set.process_set_id == 0
    assert hvd.global_process_set.ranks == list(range(size))
    assert (first.process_set_id, rest.process_set_id) == (1, 2)
    assert rest.ranks == list(range(1, size))
    assert (first.size(), rest.size()) == (1, size - 1)
    assert first.included() == (rank == 0) and rest.included() == (rank != 0)
    assert (first if rank == 0 else rest).rank() == (0 if rank == 0 else rank - 1)
    total = hvd.allreduce(torch.tensor([float(rank)]), op=hvd.Sum, process_set=mine(first, rest))
    assert total.item() == (0 if rank == 0 else sum(range(1, size)))
    # The internal query Horovod's test_process_sets_static.py makes.
    from trainrun.torch import mpi_ops
    assert mpi_ops._basics._get_process_set_ids_and_ranks() == {0: list(range(size)), 1: [0], 2: list(range(1, size))}
    hvd.shutdown()
    hvd.init()


def test_add_and_remove_need_dynamic_process_sets(monkeypatch):
    monkeypatch.delenv('HOROVOD_DYNAMIC_PROCESS_SETS')
    with pytest.raises(ValueError, match='HOROVOD_DYNAMIC_PROCESS_SETS=1 to allow adding'):
        hvd.add_process_set([0])
    assert hvd.remove_process_set(hvd.global_process_set) is False


def test_init_dynamic_sets_the_variable(monkeypatch):
    monkeypatch.delenv('HOROVOD_DYNAMIC_PROCESS_SETS')
    hvd.init(process_sets='dynamic')
    assert os.environ['HOROVOD_DYNAMIC_PROCESS_SETS'] == '1'


def test_disjoint_sets_every_op(even_odd):
    s = mine(*even_odd)
    members, rank = s.ranks, hvd.rank()
    assert s.size() == len(members) and s.rank() == members.index(rank)
    x = torch.arange(6, dtype=torch.float32) + rank
    assert torch.equal(hvd.allreduce(x, op=hvd.Sum, process_set=s),
                       sum(torch.arange(6, dtype=torch.float32) + m for m in members))
    assert torch.allclose(hvd.allreduce(x, process_set=s),
                          sum(torch.arange(6, dtype=torch.float32) + m for m in members) / len(members))
    y = torch.full((3,), rank, dtype=torch.int64)
    hvd.allreduce_(y, op=hvd.Max, process_set=s)
    assert y.tolist() == [max(members)] * 3
    pair = hvd.grouped_allreduce([x, x * 2], op=hvd.Sum, process_set=s)
    assert torch.equal(pair[1], 2 * pair[0])
    rows = hvd.allgather(torch.full((rank + 1, 2), rank), process_set=s)
    assert rows[:, 0].tolist() == [m for m in members for _ in range(m + 1)]
    root = members[-1]  # a job rank, as in Horovod
    b = hvd.broadcast(torch.tensor([rank, rank]), root, process_set=s)
    assert b.tolist() == [root, root]
    splits = [1] * len(members)
    got, received = hvd.alltoall(torch.tensor([rank * 10 + k for k in range(len(members))]), splits,
                                 process_set=s)
    assert got.tolist() == [m * 10 + s.rank() for m in members] and received.tolist() == splits
    share = hvd.reducescatter(torch.ones(2 * len(members), 1) * (rank + 1), op=hvd.Sum, process_set=s)
    assert share.flatten().tolist() == [float(sum(m + 1 for m in members))] * 2
    handle = hvd.allreduce_async(torch.tensor([1.0]), op=hvd.Sum, process_set=s)
    world = hvd.allreduce_async(torch.tensor([1.0]), op=hvd.Sum)
    assert hvd.synchronize(world).item() == hvd.size()  # the job's op, while the set's is in flight
    assert hvd.synchronize(handle).item() == len(members)
    hvd.barrier(process_set=s)


def test_overlapping_sets():
    size = hvd.size()
    head = hvd.add_process_set(range(size - 1))
    tail = hvd.add_process_set(range(1, size))
    for s in (head, tail):
        if s.included():
            out = hvd.allreduce(torch.tensor([hvd.rank() + 1.0]), op=hvd.Sum, process_set=s)
            assert out.item() == sum(r + 1 for r in s.ranks)
    assert hvd.remove_process_set(tail) and hvd.remove_process_set(head)


def test_a_rank_outside_the_set_gets_horovods_errors():
    outside = hvd.add_process_set([0])
    try:
        if hvd.rank() != 0:
            with pytest.raises(ValueError, match=f'Allreduce: Rank {hvd.rank()} is not a member of the provided '
                                                 'process set'):
                hvd.allreduce(torch.ones(1), process_set=outside)
            with pytest.raises(ValueError, match='not a member'):
                hvd.allgather_async(torch.ones(1), process_set=outside)
            with pytest.raises(ValueError, match='not part of provided process set'):
                outside.rank()
        else:
            with pytest.raises(ValueError, match='root rank 1 is not in the process set'):
                hvd.broadcast(torch.ones(1), 1, process_set=outside)
        assert outside.size() == 1
    finally:
        hvd.remove_process_set(outside)


def test_duplicates_and_removal():
    ranks = [0, 1] if hvd.size() > 2 else [1]  # not the whole job
    s = hvd.add_process_set(ranks)
    with pytest.raises(ValueError, match='duplicate'):
        hvd.add_process_set(list(reversed(ranks)))
    with pytest.raises(ValueError, match='duplicate'):
        hvd.add_process_set(range(hvd.size()))  # the job's own set
    assert hvd.remove_process_set(s) is True
    assert s.process_set_id is None and hvd.remove_process_set(s) is False
    with pytest.raises(ValueError, match='not registered'):
        hvd.allreduce(torch.ones(1), process_set=s)
    assert hvd.remove_process_set(hvd.global_process_set) is False


def test_objects_parameters_and_optimizer_state(even_odd):
    s = mine(*even_odd)
    root = s.ranks[0]
    assert hvd.broadcast_object({'from': hvd.rank()}, root_rank=root, process_set=s) == {'from': root}
    assert hvd.allgather_object(hvd.rank(), process_set=s) == s.ranks
    model = torch.nn.Linear(3, 1)
    with torch.no_grad():
        model.weight.fill_(hvd.rank())
    hvd.broadcast_parameters(model.state_dict(), root_rank=root, process_set=s)
    assert model.weight.flatten().tolist() == [float(root)] * 3
    opt = torch.optim.SGD(model.parameters(), lr=0.1 * (hvd.rank() + 1), momentum=0.5)
    hvd.broadcast_optimizer_state(opt, root_rank=root, process_set=s)
    assert opt.param_groups[0]['lr'] == pytest.approx(0.1 * (root + 1))


def test_distributed_optimizer_averages_within_its_set(even_odd):
    s = mine(*even_odd)
    w = torch.nn.Parameter(torch.zeros(4))
    opt = hvd.DistributedOptimizer(torch.optim.SGD([w], lr=1.0), named_parameters=[('w', w)], process_set=s)
    loss = (w * (hvd.rank() + 1)).sum()  # gradient rank + 1
    loss.backward()
    opt.step()
    expected = -sum(m + 1 for m in s.ranks) / len(s.ranks)
    assert w.detach().tolist() == pytest.approx([expected] * 4)


def test_autograd_in_a_set(even_odd):
    s = mine(*even_odd)
    x = torch.ones(3, requires_grad=True)
    hvd.allreduce(x, op=hvd.Sum, process_set=s).sum().backward()
    assert x.grad.tolist() == [float(len(s.ranks))] * 3
    g = torch.ones(2, 1, requires_grad=True)
    (hvd.allgather(g, process_set=s) * (hvd.rank() + 1)).sum().backward()
    # Horovod's allgather backward: the gradient averaged over the set's ranks, this rank's rows.
    assert g.grad.flatten().tolist() == pytest.approx([sum(m + 1 for m in s.ranks) / len(s.ranks)] * 2)


def test_an_optimizer_of_a_set_leaves_other_ranks_alone(even_odd):
    even, _ = even_odd
    w = torch.nn.Parameter(torch.zeros(2))
    opt = hvd.DistributedOptimizer(torch.optim.SGD([w], lr=1.0), named_parameters=[('w', w)], process_set=even)
    (w * (hvd.rank() + 1)).sum().backward()
    opt.step()  # odd ranks: their own gradient, no collective
    expected = -(sum(r + 1 for r in even.ranks) / len(even.ranks) if even.included() else hvd.rank() + 1)
    assert w.detach().tolist() == pytest.approx([expected] * 2)
