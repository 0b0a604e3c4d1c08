"""trainrun.torch in a one-process world (no launcher): API surface, dtype
coverage, errors. Run: PYTHONPATH=<build>/integrations/python /usr/bin/python3 -m pytest tests/integrations/python"""
import time

import pytest
import torch

import trainrun
import trainrun.torch as hvd


@pytest.fixture(scope='module', autouse=True)
def world():
    hvd.init()
    yield
    hvd.shutdown()


def test_world_of_one():
    assert hvd.is_initialized()
    assert (hvd.rank(), hvd.size(), hvd.local_rank(), hvd.local_size()) == (0, 1, 0, 1)
    assert (hvd.cross_rank(), hvd.cross_size()) == (0, 1)


@pytest.mark.parametrize('dtype', [torch.uint8, torch.int8, torch.int32, torch.int64, torch.float16,
                                   torch.bfloat16, torch.float32, torch.float64])
def test_every_op_is_identity_on_one_rank(dtype):
    t = torch.arange(6, dtype=dtype).reshape(3, 2)
    for op in (hvd.Sum, hvd.Average, hvd.Min, hvd.Max, hvd.Product):
        assert torch.equal(hvd.allreduce(t, op=op), t)
    assert torch.equal(hvd.allgather(t), t)
    assert torch.equal(hvd.broadcast(t, 0), t)
    assert torch.equal(hvd.alltoall(t), t)
    assert torch.equal(hvd.reducescatter(t, op=hvd.Sum), t)


def test_unsupported_dtype_is_a_clear_error():
    with pytest.raises(trainrun.UnsupportedError) as info:
        hvd.allreduce(torch.zeros(2, dtype=torch.complex64), name='flags')
    assert info.value.code == 'Unsupported'
    assert 'flags' in str(info.value) and 'torch.complex64' in str(info.value)
    assert isinstance(info.value, trainrun.TrainrunError)


def test_core_error_carries_code_and_message():
    with pytest.raises(trainrun.InvalidArgumentError) as info:
        hvd.broadcast(torch.ones(2), root_rank=5, name='rooted')
    assert info.value.code == 'InvalidArgument'
    assert "'broadcast.rooted'" in str(info.value) and 'root 5' in str(info.value)
    assert isinstance(info.value, ValueError) and isinstance(info.value, RuntimeError)
    with pytest.raises(trainrun.InvalidArgumentError, match='numeric dtype'):
        hvd.allreduce(torch.ones(2, dtype=torch.bool), prescale_factor=2.0)
    assert not hvd.mpi_ops._pending  # nothing left behind by refused submissions


def test_engine_takes_cuda_memory_for_allreduce_and_broadcast_only():
    # The engine's contract for device memory, seen through _core with a
    # device index (no GPU here: the backend sees host memory, so the ops
    # that accept it run). trainrun.torch stages the others (tests/gpu).
    core = hvd.mpi_ops._core
    t = torch.arange(4, dtype=torch.float32)
    on_gpu0 = (t.data_ptr(), core.DataType.Float32, [4], 0)
    core.synchronize(core.allreduce_async('gpu.sum', on_gpu0, hvd.Sum, 1.0, 1.0))
    core.synchronize(core.broadcast_async('gpu.bcast', on_gpu0, 0))
    assert torch.equal(t, torch.arange(4, dtype=torch.float32))
    with pytest.raises(trainrun.UnsupportedError, match=r"'gpu.gather' is on CUDA device 0: the engine's allgather "
                                                        r"takes host memory .*allreduce and broadcast take CUDA"):
        core.allgather_async('gpu.gather', on_gpu0)
    with pytest.raises(trainrun.UnsupportedError, match=r"'gpu.scaled': prescale and postscale of CUDA memory"):
        core.allreduce_async('gpu.scaled', on_gpu0, hvd.Sum, 2.0, 1.0)
    host = (t.data_ptr(), core.DataType.Float32, [4], core.CPU)
    with pytest.raises(trainrun.InvalidArgumentError, match=r"'b' is in host memory but 'a' in CUDA memory"):
        core.grouped_allreduce_async(['a', 'b'], [on_gpu0, host], hvd.Sum, 1.0, 1.0)


def test_non_contiguous_in_place():
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    view = base.t()
    assert not view.is_contiguous()
    out = hvd.allreduce_(view, op=hvd.Sum, name='transposed')
    assert out is view and torch.equal(base, torch.arange(12, dtype=torch.float32).reshape(3, 4))


def test_scale_factors_and_async_poll():
    t = torch.full((4,), 2.0)
    handle = hvd.allreduce_async(t, op=hvd.Sum, prescale_factor=3.0, postscale_factor=0.5)
    while not hvd.poll(handle):
        time.sleep(0.001)
    assert torch.equal(hvd.synchronize(handle), torch.full((4,), 3.0))
    assert torch.equal(t, torch.full((4,), 2.0))


def test_compression_round_trip():
    t = torch.linspace(-1, 1, 9)
    for compression in (hvd.Compression.fp16, hvd.Compression.bf16):
        out = hvd.allreduce(t, compression=compression)
        assert out.dtype == torch.float32 and torch.allclose(out, t, atol=1e-2)


def test_objects():
    assert hvd.broadcast_object({'a': [1, 2]}, 0) == {'a': [1, 2]}
    assert hvd.allgather_object(('x', 3)) == [('x', 3)]


def test_distributed_optimizer_is_the_wrapped_class():
    model = torch.nn.Linear(3, 1)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
                                   named_parameters=model.named_parameters())
    assert isinstance(opt, torch.optim.SGD)
    model(torch.ones(2, 3)).sum().backward()
    opt.step()
    opt.zero_grad()
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    assert 'momentum_buffer' in opt.state[model.weight]


def test_uninitialized_world_raises():
    hvd.shutdown()
    try:
        with pytest.raises(trainrun.TrainrunError, match='init'):
            hvd.rank()
    finally:
        hvd.init()


def test_timeline_needs_init_and_is_written_in_a_world_of_one(tmp_path):
    hvd.shutdown()
    try:
        with pytest.raises(ValueError, match='init'):
            hvd.start_timeline(tmp_path / 'early.json')
        with pytest.raises(ValueError, match='init'):
            hvd.stop_timeline()
    finally:
        hvd.init()
    path = tmp_path / 'one.json'
    hvd.start_timeline(path)
    hvd.allreduce(torch.ones(2), name='one.rank')
    hvd.stop_timeline()
    assert 'allreduce.one.rank' in path.read_text()
    assert not (tmp_path / 'early.json').exists()


def test_build_queries():
    assert hvd.gloo_built() and hvd.gloo_enabled() == (hvd.mpi_ops._core.backend_name() == 'tcp')
    # Horovod's nccl_built() is NCCL's version number (2.28.9: 22809), 0 without NCCL.
    assert isinstance(hvd.mpi_built(), bool) and type(hvd.nccl_built()) is int
