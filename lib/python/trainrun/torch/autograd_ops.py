"""The differentiable collectives, under Horovod's names (HorovodAllreduce,
HorovodAllgather, ...), with Horovod's backward passes: allgather's and
broadcast's average the gradient over the ranks, reducescatter's allgathers
it, alltoall's sends it back along the received splits. What mpi_ops'
synchronous calls use when an input requires a gradient. The backward
passes are collectives too, made by every rank in the same order, so they
use the ops' counted default names."""
import torch

from trainrun.torch import mpi_ops


class HorovodAllreduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, op, name, prescale_factor, postscale_factor):
        ctx.args = (op, prescale_factor, postscale_factor)
        return mpi_ops.synchronize(mpi_ops.allreduce_async(tensor, None, name, op, prescale_factor,
                                                           postscale_factor))

    @staticmethod
    def backward(ctx, grad):
        op, prescale_factor, postscale_factor = ctx.args
        reduced = mpi_ops.allreduce(grad, op=op, prescale_factor=prescale_factor,
                                    postscale_factor=postscale_factor)
        return reduced, None, None, None, None


class HorovodGroupedAllreduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, op, name, prescale_factor, postscale_factor, *tensors):
        ctx.args = (op, prescale_factor, postscale_factor)
        return tuple(mpi_ops.synchronize(mpi_ops.grouped_allreduce_async(list(tensors), None, name, op,
                                                                         prescale_factor, postscale_factor)))

    @staticmethod
    def backward(ctx, *grads):
        op, prescale_factor, postscale_factor = ctx.args
        reduced = mpi_ops.grouped_allreduce([g.contiguous() for g in grads], op=op,
                                            prescale_factor=prescale_factor, postscale_factor=postscale_factor)
        return (None, None, None, None, *reduced)


def _my_rows(grad, rows):
    """This rank's rows of an allgathered gradient, averaged over the ranks."""
    reduced = mpi_ops.allreduce(grad.contiguous(), op=mpi_ops.Average)
    all_rows = mpi_ops.allgather(torch.tensor([rows], dtype=torch.int64))
    start = int(all_rows[:mpi_ops.rank()].sum())
    return reduced.narrow(0, start, rows)


class HorovodAllgather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name, process_set=None):
        ctx.rows = tensor.shape[0]
        return mpi_ops.synchronize(mpi_ops.allgather_async(tensor, name))

    @staticmethod
    def backward(ctx, grad):
        return _my_rows(grad, ctx.rows), None, None


class HorovodGroupedAllgather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, name, process_set, *tensors):
        from trainrun.torch import grouped_ops
        ctx.rows = [t.shape[0] for t in tensors]
        return tuple(mpi_ops.synchronize(grouped_ops.grouped_allgather_async(list(tensors), name)))

    @staticmethod
    def backward(ctx, *grads):
        return (None, None, *[_my_rows(g, rows) for g, rows in zip(grads, ctx.rows)])


class HorovodBroadcast(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, root_rank, name, process_set=None):
        ctx.root_rank = root_rank
        return mpi_ops.synchronize(mpi_ops.broadcast_async(tensor, root_rank, name))

    @staticmethod
    def backward(ctx, grad):
        reduced = mpi_ops.allreduce(grad.contiguous(), op=mpi_ops.Average)
        if mpi_ops.rank() != ctx.root_rank:
            reduced = reduced * 0
        return reduced, None, None, None


def _scatter_grad(grad, op, prescale_factor, postscale_factor):
    """reducescatter's backward: the gradient of every rank's share, gathered."""
    factor = prescale_factor * postscale_factor * (mpi_ops.size() if op == mpi_ops.Sum else 1)
    return mpi_ops.allgather(grad.contiguous() * factor if factor != 1 else grad.contiguous())


class HorovodReducescatter(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name, op, process_set, prescale_factor, postscale_factor):
        ctx.args = (op, prescale_factor, postscale_factor)
        return mpi_ops.synchronize(mpi_ops.reducescatter_async(tensor, name, op, prescale_factor=prescale_factor,
                                                               postscale_factor=postscale_factor))

    @staticmethod
    def backward(ctx, grad):
        return _scatter_grad(grad, *ctx.args), None, None, None, None, None


class HorovodGroupedReducescatter(torch.autograd.Function):
    @staticmethod
    def forward(ctx, name, op, process_set, prescale_factor, postscale_factor, *tensors):
        from trainrun.torch import grouped_ops
        ctx.args = (op, prescale_factor, postscale_factor)
        return tuple(mpi_ops.synchronize(grouped_ops.grouped_reducescatter_async(
            list(tensors), name, op, prescale_factor=prescale_factor, postscale_factor=postscale_factor)))

    @staticmethod
    def backward(ctx, *grads):
        return (None, None, None, None, None, *[_scatter_grad(g, *ctx.args) for g in grads])


class HorovodAlltoall(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, splits, name, process_set=None):
        if splits is None:
            splits = [tensor.shape[0] // mpi_ops.size()] * mpi_ops.size()
        output, received = mpi_ops.synchronize(mpi_ops.alltoall_async(tensor, splits, name))
        ctx.received = received
        ctx.mark_non_differentiable(received)
        return output, received

    @staticmethod
    def backward(ctx, grad, *_):
        back, _ = mpi_ops.alltoall(grad.contiguous(), splits=ctx.received)
        return back, None, None, None


# The names mpi_ops used before.
Allreduce = HorovodAllreduce
Allgather = HorovodAllgather
Broadcast = HorovodBroadcast
