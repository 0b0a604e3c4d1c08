#!/usr/bin/env python3
"""torch DistributedDataParallel on backend "trainrun" (trainrun._c10d) beside
the same DDP on torch's own gloo, in one job: two process groups of the same
ranks, rounds alternating so that drift in the machine's load hits both.

    PYTHONPATH=build/integrations/python build/trainrun --local -np 2 /usr/bin/python3 tests/bench/c10d_vs_gloo.py

Across two SSH hosts (tests/integration's network-namespace hosts h1, h2; as
root; gloo needs the hosts' interface named):

    build/tests/with_ssh_hosts /bin/sh -c 'cd $0 && build/trainrun -np 2 -H h1:1,h2:1 \
        -x PYTHONPATH=$PWD/build/integrations/python -x GLOO_SOCKET_IFNAME=eth0 \
        /usr/bin/python3 tests/bench/c10d_vs_gloo.py' $PWD

Tables (rank 0), medians of the slowest rank:
  DDP steps     examples/pytorch/mnist.py's net at batch 32 per rank, and the
                ResNet-50 gradient set (161 parameters, 25.6 M floats, from
                --sizes; a model whose backward is trivial, so the step is the
                gradients' allreduce): images/s (batch 32 per rank) and ratio
  allreduce     one float32 allreduce of 4 B .. 64 MiB through each group:
                microseconds per op, GB/s (bytes / time), ratio

Options: --steps N per round (30), --rounds R (5), --threads T (1), --sizes FILE,
--max-mb M (64), --skip-resnet. A benchmark, never a test.
"""
import argparse
import os
import statistics
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

import trainrun.torch.distributed  # noqa: F401
from gradient_set import GradientSet, read_sizes  # this folder
from python_vs_ddp import load_example  # this folder: examples/pytorch/mnist.py as a module

HERE = os.path.dirname(os.path.abspath(__file__))


def slowest(seconds, group):
    t = torch.tensor([statistics.median(seconds)], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=group)
    return t.item()


def time_steps(models, make_batch, step, args):
    """{name: median step seconds of the slowest rank}, rounds alternating."""
    seconds = {name: [] for name in models}
    for name, model in models.items():
        for _ in range(3):
            step(model, *make_batch())
    for _ in range(args.rounds):
        for name, model in models.items():
            dist.barrier()
            for _ in range(args.steps):
                batch = make_batch()
                start = time.perf_counter()
                step(model, *batch)
                seconds[name].append(time.perf_counter() - start)
    return {name: slowest(s, None) for name, s in seconds.items()}


def mnist_step(model, x, y):
    model.zero_grad(set_to_none=True)
    F.cross_entropy(model(x), y).backward()


def resnet_step(model, x, _y):
    model.zero_grad(set_to_none=True)
    model(x).backward()


def time_allreduce(groups, nbytes, args):
    n = max(1, nbytes // 4)
    t = torch.ones(n)
    reps = max(3, min(200, int(64e6 // max(nbytes, 1)) // 4))
    seconds = {name: [] for name in groups}
    for name, g in groups.items():
        dist.all_reduce(t, group=g)
    for _ in range(args.rounds):
        for name, g in groups.items():
            dist.barrier()
            start = time.perf_counter()
            for _ in range(reps):
                dist.all_reduce(t, group=g)
            seconds[name].append((time.perf_counter() - start) / reps)
    return {name: slowest(s, None) for name, s in seconds.items()}


def print_steps(title, median, images):
    print(f'\n{title}: images/s (batch 32 per rank), median step')
    for name, s in median.items():
        print(f'  {name:10} {images / s:10.0f} images/s {1000 * s:9.2f} ms/step')
    print(f'  trainrun / gloo: {median["gloo"] / median["trainrun"]:.2f}x')


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--steps', type=int, default=30)
    p.add_argument('--rounds', type=int, default=5)
    p.add_argument('--threads', type=int, default=1)
    p.add_argument('--max-mb', type=int, default=64)
    p.add_argument('--sizes', default=os.path.join(HERE, 'resnet50_sizes.txt'))
    p.add_argument('--skip-resnet', action='store_true')
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    dist.init_process_group('trainrun')  # rank and size from trainrun; MASTER_ADDR/PORT for the gloo group
    groups = {'trainrun': dist.distributed_c10d._get_default_group(), 'gloo': dist.new_group(backend='gloo')}
    rank, size = dist.get_rank(), dist.get_world_size()
    images = 32 * size
    g = torch.Generator().manual_seed(rank)
    Net = load_example().Net
    batches = [(torch.rand(32, 1, 28, 28, generator=g), torch.randint(0, 10, (32,), generator=g)) for _ in range(8)]
    counter = iter(range(10**9))

    def next_batch():
        return batches[next(counter) % len(batches)]

    torch.manual_seed(0)
    mnist = {name: DistributedDataParallel(Net(), process_group=pg) for name, pg in groups.items()}
    mnist_median = time_steps(mnist, next_batch, mnist_step, args)
    if not args.skip_resnet:
        sizes = read_sizes(args.sizes)
        resnet = {name: DistributedDataParallel(GradientSet(sizes), process_group=pg) for name, pg in groups.items()}
        resnet_median = time_steps(resnet, lambda: (torch.ones(1), None), resnet_step, args)
    latency = {}
    nbytes = 4
    while nbytes <= args.max_mb << 20:
        latency[nbytes] = time_allreduce(groups, nbytes, args)
        nbytes *= 4 if nbytes < (1 << 20) else 2
    if rank != 0:
        return
    print(f'{size} ranks, {args.steps} steps x {args.rounds} rounds, {args.threads} thread(s)/rank; '
          f'trainrun and gloo alternating in one job')
    print_steps('DDP, MNIST net', mnist_median, images)
    if not args.skip_resnet:
        print_steps('DDP, ResNet-50 gradient set', resnet_median, images)
    print('\nallreduce float32, per op (slowest rank, median of rounds)')
    print(f'  {"bytes":>10} {"trainrun us":>12} {"gloo us":>10} {"trainrun GB/s":>14} {"gloo GB/s":>10} {"ratio":>6}')
    for nbytes, s in latency.items():
        print(f'  {nbytes:>10} {1e6 * s["trainrun"]:12.1f} {1e6 * s["gloo"]:10.1f} {nbytes / s["trainrun"] / 1e9:14.3f} '
              f'{nbytes / s["gloo"] / 1e9:10.3f} {s["gloo"] / s["trainrun"]:5.1f}x')


if __name__ == '__main__':
    main()
