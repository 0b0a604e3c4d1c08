"""`import trainrun.torch as hvd`: Horovod's horovod.torch API on trainrun's
C++ engine (fusion, mismatch errors, stall warnings, timeline)."""
from trainrun._core import TrainrunError  # noqa: F401
from trainrun.torch import elastic  # noqa: F401  (hvd.elastic.run, TorchState, ElasticSampler)
from trainrun.torch.backends import (  # noqa: F401
    ccl_built,
    cuda_built,
    ddl_built,
    gloo_built,
    gloo_enabled,
    mpi_built,
    mpi_enabled,
    nccl_built,
    rocm_built,
)
from trainrun.torch.compression import Compression  # noqa: F401
from trainrun.torch.exceptions import HorovodInternalError, HostsUpdatedInterrupt  # noqa: F401
from trainrun.torch.functions import (  # noqa: F401
    allgather_object,
    broadcast_object,
    broadcast_optimizer_state,
    broadcast_parameters,
)
from trainrun.torch.mpi_ops import (  # noqa: F401
    Adasum,
    Average,
    Max,
    Min,
    Product,
    Sum,
    allgather,
    allgather_async,
    allreduce,
    allreduce_,
    allreduce_async,
    allreduce_async_,
    alltoall,
    alltoall_async,
    barrier,
    broadcast,
    broadcast_,
    broadcast_async,
    broadcast_async_,
    cross_rank,
    cross_size,
    grouped_allgather,
    grouped_allgather_async,
    grouped_allreduce,
    grouped_allreduce_,
    grouped_allreduce_async,
    grouped_allreduce_async_,
    grouped_reducescatter,
    grouped_reducescatter_async,
    init,
    is_homogeneous,
    is_initialized,
    join,
    local_rank,
    local_size,
    mpi_threads_supported,
    poll,
    rank,
    reducescatter,
    reducescatter_async,
    shutdown,
    size,
    start_timeline,
    stop_timeline,
    synchronize,
)
from trainrun.torch.optimizer import DistributedOptimizer  # noqa: F401
from trainrun.torch.process_sets import (  # noqa: F401
    ProcessSet,
    add_process_set,
    global_process_set,
    remove_process_set,
)
from trainrun.torch.sparse import sparse_allreduce_async  # noqa: F401
from trainrun.torch.sync_batch_norm import SyncBatchNorm  # noqa: F401
