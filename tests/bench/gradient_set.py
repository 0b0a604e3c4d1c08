"""The ResNet-50 gradient set as a torch model, for the DDP benchmarks
(c10d_vs_gloo.py here, tests/gpu/ddp_gpu_bench.py on a GPU): parameters of
the sizes in resnet50_sizes.txt (161 tensors, 25.6 M floats) whose loss
touches each once, so that a step's backward is trivial and the step is
DDP's own cost."""
import torch
import torch.nn as nn


class GradientSet(nn.Module):
    """Parameters of the given sizes; the loss touches each once."""

    def __init__(self, sizes):
        super().__init__()
        self.params = nn.ParameterList([nn.Parameter(torch.zeros(n)) for n in sizes])

    def forward(self, x):
        return sum(p.sum() for p in self.params) * x.mean()


def read_sizes(path):
    """Element counts, one per line ('#' lines are comments)."""
    with open(path) as f:
        return [int(line) for line in f if line.strip() and not line.startswith('#')]
