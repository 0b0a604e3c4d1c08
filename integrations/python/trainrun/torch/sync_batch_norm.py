"""hvd.SyncBatchNorm: batch normalization whose statistics cover the batch
of every rank, as if the ranks' batches were concatenated (Horovod's
horovod.torch.SyncBatchNorm). In training the mean and variance come from
allreduces of per-channel sums; the gradient flows back through the same
(differentiable) allreduces, so the input's gradient is that of the
concatenated batch and the weight's is this rank's share of it (the
DistributedOptimizer adds the shares). Outside training, or on one rank, it
is torch's batch norm with the running statistics."""
import torch
import torch.nn.functional as F
from torch.nn.modules.batchnorm import _BatchNorm

from trainrun.torch import mpi_ops


def _channel_sum(x):
    return x.sum(dim=[d for d in range(x.dim()) if d != 1])


def _sum_over_ranks(tensor):
    return mpi_ops.allreduce(tensor, op=mpi_ops.Sum)


class SyncBatchNorm(_BatchNorm):
    """torch.nn.BatchNorm{1,2,3}d over the batches of every rank."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats)

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f'expected at least 2D input (got {input.dim()}D input)')

    def _momentum(self):
        if self.momentum is not None:
            return self.momentum
        return 1.0 / float(self.num_batches_tracked)  # a cumulative average

    def forward(self, input):
        self._check_input_dim(input)
        if self.training and self.track_running_stats:
            self.num_batches_tracked += 1
        if not self.training or mpi_ops.size() == 1:
            use_batch = self.training or not self.track_running_stats
            factor = self._momentum() if self.training and self.track_running_stats else 0.0
            return F.batch_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                                use_batch, factor, self.eps)
        return self._forward_synced(input)

    def _forward_synced(self, x):
        shape = [1, -1] + [1] * (x.dim() - 2)
        wide = x.double()
        count = _sum_over_ranks(torch.tensor([x.numel() // x.shape[1]], dtype=torch.float64))
        mean = _sum_over_ranks(_channel_sum(wide)) / count
        centered = wide - mean.view(shape)
        var = _sum_over_ranks(_channel_sum(centered * centered)) / count
        if self.track_running_stats:
            with torch.no_grad():
                m = self._momentum()
                unbiased = var * (count / (count - 1)) if count.item() > 1 else var
                self.running_mean.mul_(1 - m).add_(mean.to(self.running_mean.dtype), alpha=m)
                self.running_var.mul_(1 - m).add_(unbiased.to(self.running_var.dtype), alpha=m)
        out = (centered * torch.rsqrt(var + self.eps).view(shape)).to(x.dtype)
        if self.affine:
            out = out * self.weight.view(shape) + self.bias.view(shape)
        return out
