#!/usr/bin/env python3
"""examples/pytorch/mnist.py's digits and network, written for torch's
DistributedDataParallel, on trainrun's collectives: two lines make a DDP
script use them.

    import trainrun.torch.distributed                # registers the backend
    torch.distributed.init_process_group("trainrun")

    trainrun --local -np 2 /usr/bin/python3 examples/pytorch/mnist_ddp.py
    trainrun --local -np 2 /usr/bin/python3 examples/pytorch/mnist_ddp.py --backend gloo   # torch's own

Needs data/mnist/mnist.bin; from a build tree, ./build/trainrun gives its ranks
the build's package. Rank 0 prints per-epoch held-out loss and accuracy averaged over the
ranks and, last, a line `accuracy X`.
"""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

import trainrun.torch.distributed  # noqa: F401  (the backend "trainrun")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mnist import Net, held_out_metrics, load_digits  # noqa: E402  (the same digits, network and metrics)


def average(value):
    t = torch.tensor([value], dtype=torch.float64)
    dist.all_reduce(t)
    return t.item() / dist.get_world_size()


def evaluate(model, held_out):
    loss, accuracy = held_out_metrics(model, held_out, DistributedSampler(held_out, shuffle=False))
    return average(loss), average(accuracy)


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--backend', default='trainrun', help='trainrun (default) or gloo')
    p.add_argument('--data', default=os.path.join(here, '..', '..', 'data', 'mnist', 'mnist.bin'))
    p.add_argument('--epochs', type=int, default=3)
    p.add_argument('--batch-size', type=int, default=32, help='per rank')
    p.add_argument('--lr', type=float, default=0.025, help='before scaling by the number of ranks')
    p.add_argument('--seed', type=int, default=42)
    p.add_argument('--threads', type=int, default=1, help='torch threads per rank')
    args = p.parse_args(argv)
    dist.init_process_group(args.backend)  # rank and world size: trainrun's (RANK, WORLD_SIZE for gloo)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    train_set, held_out = load_digits(args.data)
    model = DistributedDataParallel(Net())
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr * dist.get_world_size(), momentum=0.9)
    sampler = DistributedSampler(train_set, seed=args.seed)
    loader = DataLoader(train_set, batch_size=args.batch_size, sampler=sampler)
    accuracy = 0.0
    for epoch in range(1, args.epochs + 1):
        sampler.set_epoch(epoch)
        model.train()
        start = time.perf_counter()
        for x, y in loader:
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()
        images = len(sampler) * dist.get_world_size() / (time.perf_counter() - start)
        loss, accuracy = evaluate(model, held_out)
        if dist.get_rank() == 0:
            print(f'epoch {epoch}/{args.epochs} ({args.backend}): held-out loss {loss:.4f}, '
                  f'accuracy {100 * accuracy:.2f}%, {images:.0f} images/s', flush=True)
    if dist.get_rank() == 0:
        print(f'accuracy {accuracy:.4f}', flush=True)


if __name__ == '__main__':
    main()
