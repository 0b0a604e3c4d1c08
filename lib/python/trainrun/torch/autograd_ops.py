"""The differentiable forms of allreduce, allgather and broadcast (as
Horovod's): what mpi_ops' synchronous calls use when their input requires a
gradient. The backward passes are collectives too, made by every rank (of
the op's process set) in the same order, so they use the ops' counted
default names.

mpi_ops imports this module and passes itself as `ops` (its synchronize,
*_async, allreduce, allgather, rank, Sum), so the imports run one way:
mpi_ops -> autograd_ops (process_sets imports nothing of trainrun.torch)."""
import torch

from trainrun.torch import process_sets as _sets


class Allreduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, ops, op, name, prescale_factor, postscale_factor, process_set=None):
        ctx.ops = ops
        ctx.args = (op, prescale_factor, postscale_factor, process_set)
        return ops.synchronize(ops.allreduce_async(tensor, None, name, op, prescale_factor, postscale_factor,
                                                   process_set))

    @staticmethod
    def backward(ctx, grad):
        op, prescale_factor, postscale_factor, process_set = ctx.args
        reduced = ctx.ops.allreduce(grad, op=op, prescale_factor=prescale_factor,
                                    postscale_factor=postscale_factor, process_set=process_set)
        return reduced, None, None, None, None, None, None


class Allgather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, ops, name, process_set=None):
        ctx.ops = ops
        ctx.rows = tensor.shape[0]
        ctx.process_set = process_set
        return ops.synchronize(ops.allgather_async(tensor, name, process_set))

    @staticmethod
    def backward(ctx, grad):
        ops = ctx.ops
        reduced = ops.allreduce(grad, op=ops.Sum, process_set=ctx.process_set)
        rows = ops.allgather(torch.tensor([ctx.rows], dtype=torch.int64), process_set=ctx.process_set)
        start = int(rows[:_sets._set_rank(ctx.process_set)].sum())
        return reduced.narrow(0, start, ctx.rows), None, None, None


class Broadcast(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, ops, root_rank, name, process_set=None):
        ctx.ops = ops
        ctx.root_rank = root_rank
        ctx.process_set = process_set
        return ops.synchronize(ops.broadcast_async(tensor, root_rank, name, process_set))

    @staticmethod
    def backward(ctx, grad):
        ops = ctx.ops
        reduced = ops.allreduce(grad, op=ops.Sum, process_set=ctx.process_set)
        if ops.rank() != ctx.root_rank:
            reduced = reduced * 0
        return reduced, None, None, None, None
