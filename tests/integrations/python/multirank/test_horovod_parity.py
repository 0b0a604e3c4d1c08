"""Horovod parity of trainrun.torch beyond the plain collectives (issue 25):
int16 and bool, integer pre/postscale, grouped allgather and reducescatter,
Horovod's autograd semantics, Adasum, SyncBatchNorm, sparse gradients, the
capability probes and Horovod's exception names. Every expectation is
computed here from every rank's (deterministic) input."""
import pytest
import torch

import trainrun
import trainrun.torch as hvd
from trainrun.torch import mpi_ops


def ranks():
    return range(hvd.size())


def test_int16_and_bool_allreduce_allgather_broadcast():
    mine = torch.tensor([hvd.rank() + 1, -300, 7], dtype=torch.int16)
    total = hvd.allreduce(mine, op=hvd.Sum, name='p.int16')
    assert total.dtype == torch.int16
    assert total.tolist() == [sum(r + 1 for r in ranks()), -300 * hvd.size(), 7 * hvd.size()]
    flags = torch.tensor([hvd.rank() == 0, True, False])
    assert hvd.allreduce(flags, op=hvd.Sum, name='p.bool.or').tolist() == [True, True, False]
    assert hvd.allreduce(flags, op=hvd.Min, name='p.bool.and').tolist() == [False, True, False]
    gathered = hvd.allgather(flags.reshape(1, 3), name='p.bool.gather')
    assert gathered.dtype == torch.bool and gathered[:, 0].tolist() == [r == 0 for r in ranks()]
    root = hvd.broadcast(torch.full((2,), hvd.rank(), dtype=torch.int16), root_rank=hvd.size() - 1, name='p.i16.b')
    assert root.tolist() == [hvd.size() - 1] * 2


@pytest.mark.parametrize('dtype', [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64], ids=str)
def test_integer_prescale_and_postscale_truncate_like_horovod(dtype):
    values = [3, 5, 7]
    mine = torch.tensor([v + hvd.rank() for v in values], dtype=dtype)
    out = hvd.allreduce(mine, op=hvd.Sum, prescale_factor=1.5, postscale_factor=0.5, name=f'p.scale.{dtype}')
    summed = [sum(int(1.5 * (v + r)) for r in ranks()) for v in values]
    assert out.dtype == dtype
    assert out.tolist() == [int(s * 0.5) for s in summed]


def test_bool_scaling_is_refused_with_the_tensor_named():
    with pytest.raises(ValueError, match="p.bool.scale.*bool"):
        hvd.allreduce(torch.tensor([True]), prescale_factor=2.0, name='p.bool.scale')


def test_grouped_allgather_with_rows_that_differ_by_rank():
    tensors = [torch.full((hvd.rank() + 1, 2), float(hvd.rank())), torch.arange(3) + 10 * hvd.rank()]
    out = hvd.grouped_allgather(tensors, name='p.gag')
    assert out[0].shape == (sum(r + 1 for r in ranks()), 2)
    assert out[0][:, 0].tolist() == [float(r) for r in ranks() for _ in range(r + 1)]
    assert out[1].tolist() == [v + 10 * r for r in ranks() for v in range(3)]
    handle = hvd.grouped_allgather_async(tensors, name='p.gag.async')
    assert all(torch.equal(a, b) for a, b in zip(hvd.synchronize(handle), out))


def test_grouped_reducescatter_sum_and_average_and_async():
    n = hvd.size()
    tensors = [torch.arange(n * 2, dtype=torch.float32) * (hvd.rank() + 1), torch.ones(n, 3, dtype=torch.int64)]
    total = sum(r + 1 for r in ranks())
    out = hvd.grouped_reducescatter(tensors, op=hvd.Sum, name='p.grs')
    me = hvd.rank()
    assert out[0].tolist() == [float(v * total) for v in (2 * me, 2 * me + 1)]
    assert out[1].tolist() == [[n] * 3]
    handle = hvd.grouped_reducescatter_async(tensors, op=hvd.Average, name='p.grs.async')
    avg = hvd.synchronize(handle)
    assert torch.allclose(avg[0], out[0] / n)
    with pytest.raises(ValueError):
        hvd.grouped_reducescatter([], name='p.grs.empty')


def test_allgather_backward_averages_the_gradient_over_ranks():
    x = torch.ones(hvd.rank() + 1, 2, requires_grad=True)
    y = hvd.allgather(x, name='p.ag.grad')
    (y * (hvd.rank() + 1)).sum().backward()
    mean_weight = sum(r + 1 for r in ranks()) / hvd.size()
    assert torch.allclose(x.grad, torch.full_like(x, mean_weight))


def test_broadcast_backward_averages_to_the_root_and_zeroes_the_rest():
    x = torch.ones(3, requires_grad=True)
    (hvd.broadcast(x, root_rank=0, name='p.b.grad') * (hvd.rank() + 1)).sum().backward()
    expected = sum(r + 1 for r in ranks()) / hvd.size() if hvd.rank() == 0 else 0.0
    assert torch.allclose(x.grad, torch.full_like(x, expected))


def test_grouped_allreduce_reducescatter_and_alltoall_have_gradients():
    n = hvd.size()
    a, b = torch.ones(2, requires_grad=True), torch.ones(3, requires_grad=True)
    ga, gb = hvd.grouped_allreduce([a, b], op=hvd.Sum, name='p.gar.grad')
    (ga.sum() * (hvd.rank() + 1) + gb.sum()).backward()
    assert torch.allclose(a.grad, torch.full_like(a, float(sum(r + 1 for r in ranks()))))
    assert torch.allclose(b.grad, torch.full_like(b, float(n)))

    x = torch.ones(2 * n, 2, requires_grad=True)
    hvd.reducescatter(x, op=hvd.Sum, name='p.rs.grad').sum().backward()
    assert torch.allclose(x.grad, torch.full_like(x, float(n)))  # Horovod's: allgather of grad * size

    t = torch.arange(n, dtype=torch.float32, requires_grad=True)
    received = hvd.alltoall(t, name='p.a2a.grad')
    (received * (hvd.rank() + 1)).sum().backward()
    assert t.grad.tolist() == [float(r + 1) for r in ranks()]  # row r went to rank r


def test_mpi_ops_exports_horovods_autograd_classes():
    for name in ('HorovodAllreduce', 'HorovodGroupedAllreduce', 'HorovodAllgather', 'HorovodGroupedAllgather',
                 'HorovodBroadcast', 'HorovodAlltoall', 'HorovodReducescatter', 'HorovodGroupedReducescatter'):
        assert issubclass(getattr(mpi_ops, name), torch.autograd.Function), name


def adasum_reference(vectors):
    def combine(a, b):
        dot = float(a @ b)
        return (1 - dot / (2 * float(a @ a))) * a + (1 - dot / (2 * float(b @ b))) * b
    while len(vectors) > 1:
        vectors = [combine(vectors[i], vectors[i + 1]) for i in range(0, len(vectors), 2)]
    return vectors[0]


def adasum_input(rank):
    return torch.tensor([1.0 + rank, 2.0 - rank, 0.5 * rank, 3.0], dtype=torch.float64)


def test_adasum_matches_a_reference_or_is_refused_off_powers_of_two():
    n = hvd.size()
    if n & (n - 1):
        with pytest.raises(NotImplementedError, match='power of 2'):
            hvd.allreduce(adasum_input(hvd.rank()), op=hvd.Adasum, name='p.adasum')
        return
    out = hvd.allreduce(adasum_input(hvd.rank()).float(), op=hvd.Adasum, name='p.adasum')
    expected = adasum_reference([adasum_input(r) for r in ranks()])
    assert torch.allclose(out.double(), expected, atol=1e-5), (out, expected)
    with pytest.raises(RuntimeError):
        hvd.reducescatter(torch.ones(n, 2), op=hvd.Adasum, name='p.adasum.rs')


def batch_of(rank):
    g = torch.Generator().manual_seed(100 + rank)
    return torch.randn(rank + 2, 3, 4, generator=g, dtype=torch.float64)


def test_sync_batch_norm_is_batch_norm_of_the_concatenated_batch():
    sync = hvd.SyncBatchNorm(3).double()
    ref = torch.nn.BatchNorm1d(3).double()
    with torch.no_grad():
        for m in (sync, ref):
            m.weight.copy_(torch.tensor([1.0, 2.0, 0.5]))
            m.bias.copy_(torch.tensor([0.1, -0.2, 0.3]))
    mine = batch_of(hvd.rank()).requires_grad_()
    everyone = torch.cat([batch_of(r) for r in ranks()]).requires_grad_()
    out, expected = sync(mine), ref(everyone)
    start = sum(r + 2 for r in range(hvd.rank()))
    rows = slice(start, start + hvd.rank() + 2)
    assert torch.allclose(out, expected[rows], atol=1e-10)
    # The global loss is the sum of every rank's (weighted) loss.
    weights = torch.cat([torch.full((r + 2, 3, 4), float(r + 1), dtype=torch.float64) for r in ranks()])
    (out * weights[rows]).sum().backward()
    (expected * weights).sum().backward()
    assert torch.allclose(mine.grad, everyone.grad[rows], atol=1e-10)
    assert torch.allclose(hvd.allreduce(sync.weight.grad, op=hvd.Sum, name='p.sbn.w'), ref.weight.grad, atol=1e-10)
    assert torch.allclose(sync.running_mean, ref.running_mean) and torch.allclose(sync.running_var, ref.running_var)
    sync.eval(), ref.eval()
    assert torch.allclose(sync(mine), ref(mine))


def test_sparse_allreduce_async_sums_rows_of_every_rank():
    dense = torch.zeros(5, 2)
    dense[hvd.rank() % 5] = 1.0 + hvd.rank()
    handle = hvd.sparse_allreduce_async(dense.to_sparse(), name='p.sparse', op=hvd.Sum)
    expected = torch.zeros(5, 2)
    for r in ranks():
        expected[r % 5] += 1.0 + r
    assert torch.allclose(handle().to_dense(), expected)


@pytest.mark.parametrize('sparse_as_dense', [False, True])
def test_distributed_optimizer_with_sparse_embedding_gradients(sparse_as_dense):
    torch.manual_seed(0)
    emb = torch.nn.Embedding(6, 2, sparse=True)
    start = emb.weight.detach().clone()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(emb.parameters(), lr=1.0),
                                   named_parameters=emb.named_parameters(), sparse_as_dense=sparse_as_dense)
    emb(torch.tensor([hvd.rank() % 6])).sum().backward()
    opt.step()
    expected = start.clone()
    for r in ranks():
        expected[r % 6] -= 1.0 / hvd.size()  # the average of every rank's gradient
    assert torch.allclose(emb.weight.detach(), expected)


def test_capability_probes_answer_as_horovod():
    assert isinstance(hvd.nccl_built(), int) and not isinstance(hvd.nccl_built(), bool)
    assert hvd.ccl_built() is False and hvd.ddl_built() is False and hvd.rocm_built() is False
    assert hvd.mpi_enabled() == (trainrun._core.backend_name() == 'mpi')
    assert hvd.gloo_enabled() == (trainrun._core.backend_name() == 'tcp')


def test_a_failed_collective_is_a_horovod_internal_error():
    from trainrun.torch.exceptions import HorovodInternalError, HostsUpdatedInterrupt
    assert hvd.HorovodInternalError is HorovodInternalError and issubclass(HorovodInternalError, RuntimeError)
    assert issubclass(HostsUpdatedInterrupt, HorovodInternalError) or issubclass(HostsUpdatedInterrupt, RuntimeError)
    with pytest.raises(HorovodInternalError, match='p.mismatch'):
        hvd.allreduce(torch.ones(hvd.rank() + 1), name='p.mismatch')


def test_elastic_sampler_counts_processed_samples_over_every_rank():
    sampler = hvd.elastic.ElasticSampler(list(range(4 * hvd.size())), shuffle=False)
    assert sampler.processed_num == 0
    sampler.record_batch(0, 2)
    assert sampler.processed_num == 2 * hvd.size()
    sampler.set_epoch(1)
    assert sampler.processed_num == 0


def test_alltoall_splits_must_be_int32_as_horovods():
    with pytest.raises(ValueError, match='splits must be a tensor of int32'):
        hvd.alltoall(torch.ones(hvd.size()), torch.ones(hvd.size(), dtype=torch.float32), name='p.a2a.splits')
    out, received = hvd.alltoall(torch.ones(hvd.size()), torch.ones(hvd.size(), dtype=torch.int32), name='p.a2a.ok')
    assert received.tolist() == [1] * hvd.size()


@pytest.mark.parametrize('op', ['allgather', 'broadcast', 'reducescatter'])
def test_only_allreduce_goes_on_while_a_peer_has_joined(op):
    calls = {'allgather': lambda: hvd.allgather(torch.ones(1, 2), name='p.join.ag'),
             'broadcast': lambda: hvd.broadcast(torch.ones(2), root_rank=hvd.size() - 1, name='p.join.b'),
             'reducescatter': lambda: hvd.reducescatter(torch.ones(hvd.size()), name='p.join.rs')}
    if hvd.rank() == 0:
        last = hvd.join()
    else:
        with pytest.raises(RuntimeError, match='rank 0 has joined'):
            calls[op]()
        assert hvd.allreduce(torch.ones(1), op=hvd.Sum, name=f'p.join.ar.{op}').item() == hvd.size() - 1
        last = hvd.join()
    assert last != 0
    assert hvd.allgather_object(last) == [last] * hvd.size()


@pytest.mark.parametrize('sparse_as_dense', [False, True])
def test_sparse_adam_gets_sparse_gradients_either_way(sparse_as_dense):
    emb = torch.nn.Embedding(6, 2, sparse=True)
    opt = hvd.DistributedOptimizer(torch.optim.SparseAdam(list(emb.parameters()), lr=0.1),
                                   sparse_as_dense=sparse_as_dense)
    opt.zero_grad()
    emb(torch.tensor([hvd.rank() % 6, 5])).sum().backward()
    opt.step()  # SparseAdam refuses dense gradients
    assert emb.weight.grad.is_sparse


def test_broadcast_optimizer_state_leaves_zero_gradients_as_horovods():
    frozen = torch.nn.Parameter(torch.ones(2), requires_grad=False)
    trained = torch.nn.Parameter(torch.ones(3))
    opt = hvd.DistributedOptimizer(torch.optim.SGD([frozen, trained], lr=0.1, momentum=0.9))
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    assert frozen.grad is None and torch.equal(trained.grad, torch.zeros(3))
