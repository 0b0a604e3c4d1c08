"""Sparse gradients, as Horovod reduces them: sparse_allreduce_async
allgathers each rank's indices and values (a sparse tensor's rows may differ
in number by rank) and returns a handle, a callable giving the sum (or
average) as a sparse COO tensor, duplicates left to coalesce()."""
import torch

from trainrun.torch import mpi_ops
from trainrun.torch import process_sets as _sets


def sparse_allreduce_async(tensor, name, op, process_set=None):
    """A callable handle: handle() waits and returns the reduced sparse tensor."""
    if op not in (mpi_ops.Average, mpi_ops.Sum):
        raise ValueError(f"'{name}': sparse allreduce supports Sum and Average only")
    t = tensor.coalesce() if not tensor.is_coalesced() else tensor
    indices = mpi_ops.allgather_async(t.indices().transpose(0, 1).contiguous(), name=f'{name}.indices',
                                      process_set=process_set)
    values = mpi_ops.allgather_async(t.values().contiguous(), name=f'{name}.values', process_set=process_set)

    def handle():
        gathered_values = mpi_ops.synchronize(values)
        gathered_indices = mpi_ops.synchronize(indices)
        if op == mpi_ops.Average:
            gathered_values = gathered_values / _sets._set_size(process_set)
        return torch.sparse_coo_tensor(gathered_indices.transpose(0, 1), gathered_values, t.size())
    return handle
