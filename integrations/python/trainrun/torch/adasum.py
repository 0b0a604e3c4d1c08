"""op=hvd.Adasum on CPU tensors: Horovod's adaptive summation (Maleki et
al., "Scaling Distributed Training with Adaptive Summation"). Pairs of
ranks combine a and b as

    (1 - a.b / (2 |a|^2)) a + (1 - a.b / (2 |b|^2)) b

level by level (ranks r and r ^ 2^k at level k), as Horovod's recursive
doubling does. Every rank allgathers the flat tensors and computes the same
tree in float64, so every rank gets the same bits. Like Horovod it needs a
power-of-two number of ranks. The math only: engine_ops submits the
allgather and calls it."""
import torch


def combine(a, b):
    """Adasum of two float64 vectors (zero vectors count as orthogonal)."""
    dot = torch.dot(a, b)
    na, nb = torch.dot(a, a), torch.dot(b, b)
    ca = 1.0 - dot / (2 * na) if na > 0 else 1.0
    cb = 1.0 - dot / (2 * nb) if nb > 0 else 1.0
    return ca * a + cb * b


def tree(vectors):
    """The Adasum of a power-of-two list of vectors, pairs (r, r ^ 2^k) at level k."""
    level = list(vectors)
    while len(level) > 1:
        level = [combine(level[i], level[i + 1]) for i in range(0, len(level), 2)]
    return level[0]


def check(size):
    if size & (size - 1):
        raise NotImplementedError('Running Adasum with non-power of 2 ranks is not supported yet.')
