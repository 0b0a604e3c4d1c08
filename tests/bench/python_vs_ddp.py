#!/usr/bin/env python3
"""images/s of examples/pytorch/mnist.py's network at batch 32 per rank:
trainrun.torch.DistributedOptimizer beside torch's DistributedDataParallel on
the gloo backend, in the same job (same launcher, same ranks, rounds
alternating so that drift in the machine's load hits both), and a local
optimizer without communication for the per-step overhead of each. Step
times are medians over every step of every round (the slowest rank's), which
bursts of load from other processes do not move.

    PYTHONPATH=build/integrations/python build/trainrun --local -np 2 /usr/bin/python3 tests/bench/python_vs_ddp.py

Options: --steps N per round (50), --rounds R (5), --batch-size B (32), --threads T (1).
A benchmark, never a test: it prints a table on rank 0.
"""
import argparse
import importlib.util
import os
import statistics
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

import trainrun.torch as hvd

HERE = os.path.dirname(os.path.abspath(__file__))


def load_example():
    path = os.path.join(HERE, '..', '..', 'examples', 'pytorch', 'mnist.py')
    spec = importlib.util.spec_from_file_location('mnist_example', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def one_step(model, optimizer, x, y):
    """Seconds for one training step on this rank."""
    start = time.perf_counter()
    optimizer.zero_grad()
    F.cross_entropy(model(x), y).backward()
    optimizer.step()
    return time.perf_counter() - start


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--steps', type=int, default=50)
    p.add_argument('--rounds', type=int, default=5)
    p.add_argument('--batch-size', type=int, default=32)
    p.add_argument('--threads', type=int, default=1)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    hvd.init()
    dist.init_process_group('gloo')  # RANK, WORLD_SIZE, MASTER_ADDR/PORT come from trainrun
    Net = load_example().Net
    g = torch.Generator().manual_seed(hvd.rank())
    batches = [(torch.rand(args.batch_size, 1, 28, 28, generator=g),
                torch.randint(0, 10, (args.batch_size,), generator=g)) for _ in range(8)]

    torch.manual_seed(0)
    ours = Net()
    ours_opt = hvd.DistributedOptimizer(torch.optim.SGD(ours.parameters(), lr=0.01, momentum=0.9),
                                        named_parameters=ours.named_parameters())
    torch.manual_seed(0)
    ddp = torch.nn.parallel.DistributedDataParallel(Net())
    ddp_opt = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
    torch.manual_seed(0)
    local = Net()
    local_opt = torch.optim.SGD(local.parameters(), lr=0.01, momentum=0.9)
    runs = {'trainrun.torch DistributedOptimizer': (ours, ours_opt), 'torch DDP (gloo)': (ddp, ddp_opt),
            'local, no communication': (local, local_opt)}
    for model, opt in runs.values():
        for i in range(5):  # warm up: allocations, gloo pairs, engine cache
            one_step(model, opt, *batches[i % len(batches)])
    seconds = {name: [] for name in runs}
    for _ in range(args.rounds):
        for name, (model, opt) in runs.items():
            hvd.barrier()
            for i in range(args.steps):
                seconds[name].append(one_step(model, opt, *batches[i % len(batches)]))
    median = {name: hvd.allreduce(torch.tensor(statistics.median(s)), op=hvd.Max, name=f'bench.{name}').item()
              for name, s in seconds.items()}
    dist.destroy_process_group()
    if hvd.rank() != 0:
        return
    images = args.batch_size * hvd.size()
    local_ms = 1000 * median['local, no communication']
    print(f'{hvd.size()} ranks, batch {args.batch_size}/rank, {args.steps} steps x {args.rounds} rounds, '
          f'{args.threads} thread(s)/rank; median step of each')
    print(f'{"":38} {"images/s":>10} {"ms/step":>9} {"overhead ms/step":>17}')
    for name, s in median.items():
        ms = 1000 * s
        print(f'{name:38} {images / s:10.0f} {ms:9.2f} {ms - local_ms:17.2f}')
    ratio = median['torch DDP (gloo)'] / median['trainrun.torch DistributedOptimizer']
    print(f'trainrun.torch / DDP images/s: {ratio:.2f}x')


if __name__ == '__main__':
    main()
