"""Horovod's DistributedOptimizer on trainrun's engine.

A hook on each parameter's gradient accumulator submits that gradient's
allreduce (async, in place, named after the parameter) the moment backward
has produced it, so communication overlaps the rest of backward; step()
waits for all of them, then steps the wrapped optimizer. As in Horovod,
gradients accumulated over backward_passes_per_step passes are summed (use a
mean loss scaled by 1/k for their mean), and a one-rank world skips the
allreduces (unless the job is elastic: its size may grow). After an elastic
re-form, an optimizer forgets the handles of the lost world.
"""
import warnings
import weakref
from contextlib import contextmanager

import torch

from trainrun import _core, elastic
from trainrun.torch import mpi_ops
from trainrun.torch.compression import Compression
from trainrun.torch.sparse import sparse_allreduce_async

_optimizers = weakref.WeakSet()


def _forget_handles():
    for optimizer in list(_optimizers):
        optimizer._forget_handles()


elastic._on_reform(_forget_handles)


class _BackToSparse:
    """The ctx of a sparse gradient allreduced dense (sparse_as_dense)."""


class _DistributedOptimizer(torch.optim.Optimizer):
    def __init__(self, params, named_parameters, compression, backward_passes_per_step=1, op=mpi_ops.Average,
                 gradient_predivide_factor=1.0, sparse_as_dense=False, process_set=None):
        super(self.__class__, self).__init__(params)
        self._process_set = process_set  # None: the whole job
        self._compression = compression
        self._sparse_as_dense = sparse_as_dense
        if named_parameters is not None:
            named_parameters = list(named_parameters)
        else:
            named_parameters = [(f'noname.{i}.{j}', p) for i, group in enumerate(self.param_groups)
                                for j, p in enumerate(group['params'])]
        if any(not isinstance(p, tuple) for p in named_parameters):
            raise ValueError('named_parameters should be a sequence of (name, parameter) tuples, '
                             'usually model.named_parameters()')
        names = [name for name, _ in named_parameters]
        if len(set(names)) != len(names):
            raise ValueError('parameter names in named_parameters must be unique')
        known = {id(p) for _, p in named_parameters}
        unnamed = [p for group in self.param_groups for p in group['params'] if id(p) not in known]
        if unnamed:
            raise ValueError(f'named_parameters lacks {len(unnamed)} parameter(s) of the optimizer')
        if backward_passes_per_step < 1:
            raise ValueError('backward_passes_per_step must be >= 1')
        if op != mpi_ops.Average and gradient_predivide_factor != 1.0:
            raise ValueError('gradient_predivide_factor needs op=Average')
        self._parameter_names = {p: f'gradient.{name}' for name, p in named_parameters}
        self.backward_passes_per_step = backward_passes_per_step
        self.op = op
        self.gradient_predivide_factor = gradient_predivide_factor
        self._allreduce_delay = {p: backward_passes_per_step for _, p in named_parameters}
        self._handles = {}
        self._grad_accs = []
        self._requires_update = set()
        self._synchronized = False
        self._should_synchronize = True
        # A rank outside the process set steps on its own gradients (Horovod's way).
        included = process_set is None or process_set.included()
        set_size = mpi_ops.size() if process_set is None else len(process_set.ranks)
        if included and (set_size > 1 or _core.elastic_enabled()):
            self._register_hooks()
        _optimizers.add(self)

    def _forget_handles(self):
        self._handles.clear()
        self._allreduce_delay = {p: self.backward_passes_per_step for p in self._allreduce_delay}
        self._synchronized = False

    def _register_hooks(self):
        for group in self.param_groups:
            for p in group['params']:
                if not p.requires_grad:
                    continue
                # No zero gradient is made ahead of backward (as in Horovod): it
                # would turn an nn.Embedding(sparse=True)'s sparse gradients dense.
                self._requires_update.add(p)
                # The AccumulateGrad node of p, reached through a view of it.
                accumulator = p.expand_as(p).grad_fn.next_functions[0][0]
                accumulator.register_hook(self._make_hook(p))
                self._grad_accs.append(accumulator)  # autograd holds them weakly

    def _make_hook(self, p):
        def hook(*_):
            if self._handles.get(p, (None, None))[0] is not None and self._allreduce_delay[p] <= 0:
                raise AssertionError(
                    'Gradients were computed more than backward_passes_per_step times before call to '
                    'step(). Increase backward_passes_per_step to accumulate gradients locally.')
            self._allreduce_delay[p] -= 1
            handle, ctx = None, None
            if self._allreduce_delay[p] == 0:
                handle, ctx = self._allreduce_grad_async(p)
            self._handles[p] = (handle, ctx)
        return hook

    def _allreduce_grad_async(self, p):
        if p.grad is None:  # unused this step (or zero_grad(set_to_none=True)): every rank must agree
            p.grad = torch.zeros_like(p)
        if p.grad.is_sparse:
            if not self._sparse_as_dense:  # a callable handle (trainrun.torch.sparse); no ctx
                return sparse_allreduce_async(p.grad, self._parameter_names[p], self.op, self._process_set), None
            dense = p.grad.to_dense()
            handle = mpi_ops.allreduce_async_(dense, name=self._parameter_names[p], op=self.op,
                                              process_set=self._process_set)
            return handle, _BackToSparse()
        wire, ctx = self._compression.compress(p.grad)
        prescale, postscale = 1.0, 1.0
        if self.op == mpi_ops.Average:
            prescale, postscale = 1.0 / self.gradient_predivide_factor, self.gradient_predivide_factor
        handle = mpi_ops.allreduce_async_(wire, name=self._parameter_names[p], op=self.op,
                                          prescale_factor=prescale, postscale_factor=postscale,
                                          process_set=self._process_set)
        return handle, ctx

    def synchronize(self):
        """Waits for every gradient's allreduce (submitting the ones backward did not produce)."""
        if self._process_set is not None and not self._process_set.included():
            self._synchronized = True
            return
        for p in self._requires_update:
            if self._handles.get(p, (None, None))[0] is None:
                self._handles[p] = self._allreduce_grad_async(p)
        for p, (handle, ctx) in self._handles.items():
            if callable(handle):  # a sparse gradient's allgathers
                p.grad = handle()
                self._allreduce_delay[p] = self.backward_passes_per_step
                continue
            output = mpi_ops.synchronize(handle)
            self._allreduce_delay[p] = self.backward_passes_per_step
            if isinstance(ctx, _BackToSparse):  # as Horovod: the optimizer gets a sparse gradient again
                p.grad = output.to_sparse()
            elif ctx is not None:
                p.grad.copy_(self._compression.decompress(output, ctx))
        self._handles.clear()
        self._synchronized = True

    @contextmanager
    def skip_synchronize(self):
        """For step() after an explicit synchronize() (e.g. to clip gradients)."""
        self._should_synchronize = False
        try:
            yield
        finally:
            self._should_synchronize = True

    def step(self, closure=None):
        if self._should_synchronize:
            if self._synchronized:
                warnings.warn('optimizer.step() called without optimizer.skip_synchronize() after '
                              'optimizer.synchronize(): the gradients are allreduced twice.')
            self.synchronize()
        self._synchronized = False
        return super(self.__class__, self).step(closure)

    def zero_grad(self, *args, **kwargs):
        if self._handles:
            raise AssertionError('optimizer.zero_grad() was called after loss.backward() but before '
                                 'optimizer.step() or optimizer.synchronize().')
        return super(self.__class__, self).zero_grad(*args, **kwargs)


def DistributedOptimizer(optimizer, named_parameters=None, compression=Compression.none, backward_passes_per_step=1,
                         op=mpi_ops.Average, gradient_predivide_factor=1.0, num_groups=0, groups=None,
                         sparse_as_dense=False, process_set=None):
    """Wraps `optimizer` (an instance of its own class, as in Horovod) so that
    gradients are allreduced across ranks before each step."""
    cls = type(optimizer.__class__.__name__, (optimizer.__class__,), dict(_DistributedOptimizer.__dict__))
    return cls(optimizer.param_groups, named_parameters, compression, backward_passes_per_step, op,
               gradient_predivide_factor, sparse_as_dense, process_set)
