"""The differentiable collectives, under Horovod's names (HorovodAllreduce,
HorovodAllgather, ...), with Horovod's backward passes: allgather's and
broadcast's average the gradient over the ranks of the op's process set,
reducescatter's allgathers it, alltoall's sends it back along the received
splits. What mpi_ops' synchronous calls use when an input requires a
gradient. The backward passes are collectives too, made by every rank (of
the op's process set) in the same order, so they use the ops' counted
default names.

Imports run one way: this module -> mpi_ops, grouped_ops; the package hands
it to mpi_ops (mpi_ops._extend), which never imports it."""
import torch

from trainrun.torch import grouped_ops, mpi_ops
from trainrun.torch import process_sets as _sets

__all__ = ['HorovodAllreduce', 'HorovodGroupedAllreduce', 'HorovodAllgather', 'HorovodGroupedAllgather',
           'HorovodBroadcast', 'HorovodReducescatter', 'HorovodGroupedReducescatter', 'HorovodAlltoall']


class HorovodAllreduce(torch.autograd.Function):
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


class HorovodGroupedAllreduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, op, name, prescale_factor, postscale_factor, process_set, *tensors):
        ctx.args = (op, prescale_factor, postscale_factor, process_set)
        return tuple(mpi_ops.synchronize(mpi_ops.grouped_allreduce_async(
            list(tensors), None, name, op, prescale_factor, postscale_factor, process_set)))

    @staticmethod
    def backward(ctx, *grads):
        op, prescale_factor, postscale_factor, process_set = ctx.args
        reduced = mpi_ops.grouped_allreduce([g.contiguous() for g in grads], op=op,
                                            prescale_factor=prescale_factor, postscale_factor=postscale_factor,
                                            process_set=process_set)
        return (None, None, None, None, None, *reduced)


def _my_rows(grad, rows, process_set):
    """This rank's rows of an allgathered gradient, averaged over the set's ranks."""
    reduced = mpi_ops.allreduce(grad.contiguous(), op=mpi_ops.Average, process_set=process_set)
    all_rows = mpi_ops.allgather(torch.tensor([rows], dtype=torch.int64), process_set=process_set)
    start = int(all_rows[:_sets._set_rank(process_set)].sum())
    return reduced.narrow(0, start, rows)


class HorovodAllgather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name, process_set=None):
        ctx.rows = tensor.shape[0]
        ctx.process_set = process_set
        return mpi_ops.synchronize(mpi_ops.allgather_async(tensor, name, process_set))

    @staticmethod
    def backward(ctx, grad):
        return _my_rows(grad, ctx.rows, ctx.process_set), None, None


class HorovodGroupedAllgather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, name, process_set, *tensors):
        ctx.rows = [t.shape[0] for t in tensors]
        ctx.process_set = process_set
        return tuple(mpi_ops.synchronize(grouped_ops.grouped_allgather_async(list(tensors), name, process_set)))

    @staticmethod
    def backward(ctx, *grads):
        return (None, None, *[_my_rows(g, rows, ctx.process_set) for g, rows in zip(grads, ctx.rows)])


class HorovodBroadcast(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, root_rank, name, process_set=None):
        ctx.root_rank = root_rank
        ctx.process_set = process_set
        return mpi_ops.synchronize(mpi_ops.broadcast_async(tensor, root_rank, name, process_set))

    @staticmethod
    def backward(ctx, grad):
        reduced = mpi_ops.allreduce(grad.contiguous(), op=mpi_ops.Average, process_set=ctx.process_set)
        if mpi_ops.rank() != ctx.root_rank:
            reduced = reduced * 0
        return reduced, None, None, None


def _scatter_grad(grad, op, prescale_factor, postscale_factor, process_set):
    """reducescatter's backward: the gradient of every rank's share, gathered."""
    factor = prescale_factor * postscale_factor * (_sets._set_size(process_set) if op == mpi_ops.Sum else 1)
    grad = grad.contiguous()
    return mpi_ops.allgather(grad * factor if factor != 1 else grad, process_set=process_set)


class HorovodReducescatter(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name, op, process_set, prescale_factor, postscale_factor):
        ctx.args = (op, prescale_factor, postscale_factor, process_set)
        return mpi_ops.synchronize(mpi_ops.reducescatter_async(tensor, name, op, process_set,
                                                               prescale_factor=prescale_factor,
                                                               postscale_factor=postscale_factor))

    @staticmethod
    def backward(ctx, grad):
        return _scatter_grad(grad, *ctx.args), None, None, None, None, None


class HorovodGroupedReducescatter(torch.autograd.Function):
    @staticmethod
    def forward(ctx, name, op, process_set, prescale_factor, postscale_factor, *tensors):
        ctx.args = (op, prescale_factor, postscale_factor, process_set)
        return tuple(mpi_ops.synchronize(grouped_ops.grouped_reducescatter_async(
            list(tensors), name, op, process_set, prescale_factor=prescale_factor,
            postscale_factor=postscale_factor)))

    @staticmethod
    def backward(ctx, *grads):
        return (None, None, None, None, None, *[_scatter_grad(g, *ctx.args) for g in grads])


class HorovodAlltoall(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, splits, name, process_set=None):
        if splits is None:
            size = _sets._set_size(process_set)
            splits = [tensor.shape[0] // size] * size
        output, received = mpi_ops.synchronize(mpi_ops.alltoall_async(tensor, splits, name, process_set))
        ctx.received = received
        ctx.process_set = process_set
        ctx.mark_non_differentiable(received)
        return output, received

    @staticmethod
    def backward(ctx, grad, *_):
        back, _ = mpi_ops.alltoall(grad.contiguous(), splits=ctx.received, process_set=ctx.process_set)
        return back, None, None, None
