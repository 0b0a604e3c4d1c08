"""DistributedDataParallel on a GPU with backend "trainrun" beside torch's own
"nccl", in one job: two process groups of the same ranks, the same model
twice (same initial weights), rounds alternating so that drift in the
machine hits both. Run by scripts/gpu_checks.sh:

    trainrun --local -np 1 python3 ddp_gpu_bench.py [--steps N] [--rounds R] [--sizes FILE]

Models: torchvision's ResNet-50 (batch 32 of 224x224 images, SGD; when
torchvision is there), and the ResNet-50 gradient set (161 parameters,
25.6 M floats, from --sizes; its backward is trivial, so a step is DDP's
own cost: bucketing, the allreduce calls, the copies). With one GPU, np=1
is what can be measured: the numbers are each backend's cost per step
around a one-rank reduction, not a network's. Prints, on rank 0, ms per
step (median of the slowest rank) and images/s per backend, and the
ratio; and that the gradient-set models' parameters agree after the steps
(ResNet-50's cuDNN kernels need not be deterministic).
A benchmark, never a test; exits 77 without a GPU.
"""
import argparse
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

import trainrun.torch.distributed  # noqa: F401  registers the backend

# tests/bench/gradient_set.py: beside this file in the GPU bundle, else in tests/bench.
sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'bench'))
from gradient_set import GradientSet, read_sizes  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def slowest(values):
    t = torch.tensor([statistics.median(values)], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def time_steps(models, batch, step, steps, rounds):
    """{name: median seconds per step on the slowest rank}, rounds alternating."""
    seconds = {name: [] for name in models}
    for model in models.values():
        for _ in range(3):
            step(model, batch)
    torch.cuda.synchronize()
    for _ in range(rounds):
        for name, model in models.items():
            dist.barrier()
            torch.cuda.synchronize()
            start = time.perf_counter()
            for _ in range(steps):
                step(model, batch)
            torch.cuda.synchronize()
            seconds[name].append((time.perf_counter() - start) / steps)
    return {name: slowest(s) for name, s in seconds.items()}


def make_models(build, groups, dev):
    models = {}
    for name, group in groups.items():
        torch.manual_seed(0)
        module = build().to(dev)
        model = DistributedDataParallel(module, device_ids=[dev.index], process_group=group)
        model.optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        models[name] = model
    return models


def sgd_step(model, batch):
    model.optimizer.zero_grad(set_to_none=True)
    model(batch).float().mean().backward()
    model.optimizer.step()


def agree(models):
    """Whether every model's parameters equal the first's (after the warm-up steps)."""
    first, *rest = models.values()
    return all(torch.allclose(p, q, rtol=1e-5, atol=1e-6)
               for other in rest for p, q in zip(first.parameters(), other.parameters()))


def report(title, median, images):
    print(f'\n{title}: median ms per step (slowest rank), images/s')
    for name, s in median.items():
        print(f'  {name:10} {1000 * s:9.2f} ms/step {images / s:10.0f} images/s')
    print(f'  nccl / trainrun (time per step): {median["nccl"] / median["trainrun"]:.2f}')


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--steps', type=int, default=20)
    p.add_argument('--rounds', type=int, default=3)
    p.add_argument('--sizes', default=os.path.join(HERE, '..', 'bench', 'resnet50_sizes.txt'))
    args = p.parse_args()
    if not torch.cuda.is_available():
        print('ddp_gpu_bench: skipped: torch sees no CUDA device')
        return 77
    dist.init_process_group('trainrun')  # rank and size from trainrun; MASTER_ADDR/PORT for the nccl group
    rank, size = dist.get_rank(), dist.get_world_size()
    dev = torch.device('cuda', int(os.environ.get('LOCAL_RANK', 0)) % torch.cuda.device_count())
    torch.cuda.set_device(dev)
    groups = {'trainrun': dist.distributed_c10d._get_default_group(), 'nccl': dist.new_group(backend='nccl')}
    results = []
    try:
        import torchvision
        images = torch.randn(32, 3, 224, 224, device=dev)
        models = make_models(torchvision.models.resnet50, groups, dev)
        median = time_steps(models, images, sgd_step, args.steps, args.rounds)
        results.append(('DDP, torchvision ResNet-50, batch 32', median, 32 * size))
    except ImportError:
        print('ddp_gpu_bench: no torchvision here: the ResNet-50 model is left out')
    sizes = read_sizes(args.sizes)
    models = make_models(lambda: GradientSet(sizes), groups, dev)
    median = time_steps(models, torch.ones(1, device=dev), sgd_step, args.steps, args.rounds)
    ok = agree(models)
    results.append(('DDP, ResNet-50 gradient set (161 parameters, 25.6 M floats)', median, 32 * size))
    if rank == 0:
        print(f'{size} rank(s) on {torch.cuda.get_device_name(dev)}, torch {torch.__version__}, '
              f'NCCL {".".join(map(str, torch.cuda.nccl.version()))}; {args.steps} steps x {args.rounds} rounds, '
              f'trainrun and nccl alternating in one job')
        for title, median, images in results:
            report(title, median, images)
        print(f'\ngradient set: the trainrun and nccl models\' parameters agree after the steps: {"yes" if ok else "NO"}')
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
