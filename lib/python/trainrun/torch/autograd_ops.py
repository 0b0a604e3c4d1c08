"""The differentiable forms of allreduce, allgather and broadcast (as
Horovod's): what mpi_ops' synchronous calls use when their input requires a
gradient. The backward passes are collectives too, made by every rank in the
same order, so they use the ops' counted default names.

mpi_ops imports this module and passes itself as `ops` (its synchronize,
*_async, allreduce, allgather, rank, Sum), so the imports run one way:
mpi_ops -> autograd_ops."""
import torch


class Allreduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, ops, op, name, prescale_factor, postscale_factor):
        ctx.ops = ops
        ctx.args = (op, prescale_factor, postscale_factor)
        return ops.synchronize(ops.allreduce_async(tensor, None, name, op, prescale_factor, postscale_factor))

    @staticmethod
    def backward(ctx, grad):
        op, prescale_factor, postscale_factor = ctx.args
        reduced = ctx.ops.allreduce(grad, op=op, prescale_factor=prescale_factor,
                                    postscale_factor=postscale_factor)
        return reduced, None, None, None, None, None


class Allgather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, ops, name):
        ctx.ops = ops
        ctx.rows = tensor.shape[0]
        return ops.synchronize(ops.allgather_async(tensor, name))

    @staticmethod
    def backward(ctx, grad):
        ops = ctx.ops
        reduced = ops.allreduce(grad, op=ops.Sum)
        rows = ops.allgather(torch.tensor([ctx.rows], dtype=torch.int64))
        start = int(rows[:ops.rank()].sum())
        return reduced.narrow(0, start, ctx.rows), None, None


class Broadcast(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, ops, root_rank, name):
        ctx.ops = ops
        ctx.root_rank = root_rank
        return ops.synchronize(ops.broadcast_async(tensor, root_rank, name))

    @staticmethod
    def backward(ctx, grad):
        ops = ctx.ops
        reduced = ops.allreduce(grad, op=ops.Sum)
        if ops.rank() != ctx.root_rank:
            reduced = reduced * 0
        return reduced, None, None, None
