"""The differentiable collectives, under Horovod's names (HorovodAllreduce,
HorovodAllgather, ...), with Horovod's backward passes: allgather's and
broadcast's average the gradient over the ranks of the op's process set,
reducescatter's allgathers it, alltoall's sends it back along the received
splits. What mpi_ops' synchronous calls use when an input requires a
gradient. The backward passes are collectives too, made by every rank (of
the op's process set) in the same order, so they use the ops' counted
default names.

Here too are the synchronous collectives that take those passes when an
input requires a gradient (allreduce, allgather, ... as mpi_ops exports
them). Imports run one way: this module -> engine_ops, grouped_ops."""
import torch

from trainrun.torch import engine_ops, grouped_ops
from trainrun.torch import process_sets as _sets

__all__ = ['HorovodAllreduce', 'HorovodGroupedAllreduce', 'HorovodAllgather', 'HorovodGroupedAllgather',
           'HorovodBroadcast', 'HorovodReducescatter', 'HorovodGroupedReducescatter', 'HorovodAlltoall']


class HorovodAllreduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, op, name, prescale_factor, postscale_factor, process_set=None):
        ctx.args = (op, prescale_factor, postscale_factor, process_set)
        return engine_ops.synchronize(engine_ops.allreduce_async(tensor, None, name, op, prescale_factor,
                                                           postscale_factor, process_set))

    @staticmethod
    def backward(ctx, grad):
        op, prescale_factor, postscale_factor, process_set = ctx.args
        reduced = allreduce(grad, op=op, prescale_factor=prescale_factor,
                                    postscale_factor=postscale_factor, process_set=process_set)
        return reduced, None, None, None, None, None


class HorovodGroupedAllreduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, op, name, prescale_factor, postscale_factor, process_set, *tensors):
        ctx.args = (op, prescale_factor, postscale_factor, process_set)
        return tuple(engine_ops.synchronize(engine_ops.grouped_allreduce_async(
            list(tensors), None, name, op, prescale_factor, postscale_factor, process_set)))

    @staticmethod
    def backward(ctx, *grads):
        op, prescale_factor, postscale_factor, process_set = ctx.args
        reduced = grouped_allreduce([g.contiguous() for g in grads], op=op,
                                            prescale_factor=prescale_factor, postscale_factor=postscale_factor,
                                            process_set=process_set)
        return (None, None, None, None, None, *reduced)


def _my_rows(grad, rows, process_set):
    """This rank's rows of an allgathered gradient, averaged over the set's ranks."""
    reduced = allreduce(grad.contiguous(), op=engine_ops.Average, process_set=process_set)
    all_rows = allgather(torch.tensor([rows], dtype=torch.int64), process_set=process_set)
    start = int(all_rows[:_sets._set_rank(process_set)].sum())
    return reduced.narrow(0, start, rows)


class HorovodAllgather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name, process_set=None):
        ctx.rows = tensor.shape[0]
        ctx.process_set = process_set
        return engine_ops.synchronize(engine_ops.allgather_async(tensor, name, process_set))

    @staticmethod
    def backward(ctx, grad):
        return _my_rows(grad, ctx.rows, ctx.process_set), None, None


class HorovodGroupedAllgather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, name, process_set, *tensors):
        ctx.rows = [t.shape[0] for t in tensors]
        ctx.process_set = process_set
        return tuple(engine_ops.synchronize(grouped_ops.grouped_allgather_async(list(tensors), name, process_set)))

    @staticmethod
    def backward(ctx, *grads):
        return (None, None, *[_my_rows(g, rows, ctx.process_set) for g, rows in zip(grads, ctx.rows)])


class HorovodBroadcast(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, root_rank, name, process_set=None):
        ctx.root_rank = root_rank
        ctx.process_set = process_set
        return engine_ops.synchronize(engine_ops.broadcast_async(tensor, root_rank, name, process_set))

    @staticmethod
    def backward(ctx, grad):
        reduced = allreduce(grad.contiguous(), op=engine_ops.Average, process_set=ctx.process_set)
        if engine_ops.rank() != ctx.root_rank:
            reduced = reduced * 0
        return reduced, None, None, None


def _scatter_grad(grad, op, prescale_factor, postscale_factor, process_set):
    """reducescatter's backward: the gradient of every rank's share, gathered."""
    factor = prescale_factor * postscale_factor * (_sets._set_size(process_set) if op == engine_ops.Sum else 1)
    grad = grad.contiguous()
    return allgather(grad * factor if factor != 1 else grad, process_set=process_set)


class HorovodReducescatter(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name, op, process_set, prescale_factor, postscale_factor):
        ctx.args = (op, prescale_factor, postscale_factor, process_set)
        return engine_ops.synchronize(engine_ops.reducescatter_async(tensor, name, op, process_set,
                                                               prescale_factor=prescale_factor,
                                                               postscale_factor=postscale_factor))

    @staticmethod
    def backward(ctx, grad):
        return _scatter_grad(grad, *ctx.args), None, None, None, None, None


class HorovodGroupedReducescatter(torch.autograd.Function):
    @staticmethod
    def forward(ctx, name, op, process_set, prescale_factor, postscale_factor, *tensors):
        ctx.args = (op, prescale_factor, postscale_factor, process_set)
        return tuple(engine_ops.synchronize(grouped_ops.grouped_reducescatter_async(
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
        output, received = engine_ops.synchronize(engine_ops.alltoall_async(tensor, splits, name, process_set))
        ctx.received = received
        ctx.process_set = process_set
        ctx.mark_non_differentiable(received)
        return output, received

    @staticmethod
    def backward(ctx, grad, *_):
        back, _ = alltoall(grad.contiguous(), splits=ctx.received, process_set=ctx.process_set)
        return back, None, None, None


def allreduce(tensor, average=None, name=None, compression=None, op=None, prescale_factor=1.0,
              postscale_factor=1.0, process_set=None):
    """A reduced copy of `tensor` (op Average unless told); differentiable."""
    if engine_ops._differentiable(tensor):
        return HorovodAllreduce.apply(tensor, engine_ops._op(average, op), name, prescale_factor, postscale_factor,
                                      process_set)
    if compression is None:
        return engine_ops.synchronize(engine_ops.allreduce_async(tensor, average, name, op, prescale_factor,
                                                                 postscale_factor, process_set))
    wire, ctx = compression.compress(tensor)
    wire = engine_ops._copy(wire) if wire is tensor else wire.contiguous()
    reduced = engine_ops.synchronize(engine_ops.allreduce_async_(wire, average, name, op, prescale_factor,
                                                                 postscale_factor, process_set))
    return compression.decompress(reduced, ctx)


def grouped_allreduce(tensors, average=None, name=None, compression=None, op=None, prescale_factor=1.0,
                      postscale_factor=1.0, process_set=None):
    if any(engine_ops._differentiable(t) for t in tensors):
        return list(HorovodGroupedAllreduce.apply(engine_ops._op(average, op), name, prescale_factor,
                                                  postscale_factor, process_set, *tensors))
    return engine_ops.synchronize(engine_ops.grouped_allreduce_async(tensors, average, name, op, prescale_factor,
                                                                     postscale_factor, process_set))


def allgather(tensor, name=None, process_set=None):
    """Every rank's tensor concatenated along the first dimension (which may differ); differentiable."""
    if engine_ops._differentiable(tensor):
        return HorovodAllgather.apply(tensor, name, process_set)
    return engine_ops.synchronize(engine_ops.allgather_async(tensor, name, process_set))


def grouped_allgather(tensors, name=None, process_set=None):
    """Each tensor concatenated over the ranks along its first dimension; differentiable."""
    if any(engine_ops._differentiable(t) for t in tensors):
        return list(HorovodGroupedAllgather.apply(name, process_set, *tensors))
    return engine_ops.synchronize(grouped_ops.grouped_allgather_async(tensors, name, process_set))


def broadcast(tensor, root_rank, name=None, process_set=None):
    """A copy of root_rank's tensor; differentiable."""
    if engine_ops._differentiable(tensor):
        return HorovodBroadcast.apply(tensor, root_rank, name, process_set)
    return engine_ops.synchronize(engine_ops.broadcast_async(tensor, root_rank, name, process_set))


def alltoall(tensor, splits=None, name=None, process_set=None):
    """Rows of the first dimension scattered by `splits` (even without), gathered
    rank by rank; with splits, also the rows received from each rank. Differentiable."""
    even = splits is not None or tensor.shape[0] % _sets._set_size(process_set) == 0
    if engine_ops._differentiable(tensor) and even:
        output, received = HorovodAlltoall.apply(tensor, splits, name, process_set)
        return output if splits is None else (output, received)
    return engine_ops.synchronize(engine_ops.alltoall_async(tensor, splits, name, process_set))


def reducescatter(tensor, name=None, compression=None, op=engine_ops.Average, process_set=None,
                  prescale_factor=1.0, postscale_factor=1.0):
    """The reduction of every rank's tensor; this rank gets its share of the first dimension. Differentiable."""
    if engine_ops._differentiable(tensor):
        return HorovodReducescatter.apply(tensor, name, op, process_set, prescale_factor, postscale_factor)
    return engine_ops.synchronize(engine_ops.reducescatter_async(tensor, name, op, process_set,
                                                                 prescale_factor=prescale_factor,
                                                                 postscale_factor=postscale_factor))


def grouped_reducescatter(tensors, name=None, compression=None, op=engine_ops.Average, process_set=None,
                          prescale_factor=1.0, postscale_factor=1.0):
    """Each tensor reduced over the ranks, this rank's share of its first dimension; differentiable."""
    if any(engine_ops._differentiable(t) for t in tensors):
        return list(HorovodGroupedReducescatter.apply(name, op, process_set, prescale_factor, postscale_factor,
                                                      *tensors))
    return engine_ops.synchronize(grouped_ops.grouped_reducescatter_async(
        tensors, name, op, process_set, prescale_factor=prescale_factor, postscale_factor=postscale_factor))
