"""The differentiable forms of allreduce, allgather and broadcast (as
Horovod's): what mpi_ops' synchronous calls use when their input requires a
gradient. The backward passes are collectives too, made by every rank in the
same order, so they use the ops' counted default names."""
import torch

from trainrun.torch import mpi_ops
from trainrun.torch import process_sets as _sets


class Allreduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, op, name, prescale_factor, postscale_factor, process_set=None):
        ctx.args = (op, prescale_factor, postscale_factor, process_set)
        return mpi_ops.synchronize(mpi_ops.allreduce_async(tensor, None, name, op, prescale_factor,
                                                           postscale_factor, process_set))

    @staticmethod
    def backward(ctx, grad):
        op, prescale_factor, postscale_factor, process_set = ctx.args
        reduced = mpi_ops.allreduce(grad, op=op, prescale_factor=prescale_factor,
                                    postscale_factor=postscale_factor, process_set=process_set)
        return reduced, None, None, None, None, None


class Allgather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name, process_set=None):
        ctx.rows = tensor.shape[0]
        ctx.process_set = process_set
        return mpi_ops.synchronize(mpi_ops.allgather_async(tensor, name, process_set))

    @staticmethod
    def backward(ctx, grad):
        reduced = mpi_ops.allreduce(grad, op=mpi_ops.Sum, process_set=ctx.process_set)
        rows = mpi_ops.allgather(torch.tensor([ctx.rows], dtype=torch.int64), process_set=ctx.process_set)
        start = int(rows[:_sets._set_rank(ctx.process_set)].sum())
        return reduced.narrow(0, start, ctx.rows), None, None


class Broadcast(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, root_rank, name, process_set=None):
        ctx.root_rank = root_rank
        ctx.process_set = process_set
        return mpi_ops.synchronize(mpi_ops.broadcast_async(tensor, root_rank, name, process_set))

    @staticmethod
    def backward(ctx, grad):
        reduced = mpi_ops.allreduce(grad, op=mpi_ops.Sum, process_set=ctx.process_set)
        if mpi_ops.rank() != ctx.root_rank:
            reduced = reduced * 0
        return reduced, None, None, None
