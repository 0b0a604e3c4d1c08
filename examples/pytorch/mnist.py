#!/usr/bin/env python3
"""Horovod's PyTorch MNIST workflow on trainrun: the same digits and network
as examples/mnist (the C++ program), written as a Horovod script whose only
change is its import line.

    trainrun --local -np 2 /usr/bin/python3 examples/pytorch/mnist.py
    /usr/bin/python3 examples/pytorch/mnist.py --runner -2     # trainrun.Runner(np=-2)
    trainrun --local -np 3 --min-np 1 /usr/bin/python3 examples/pytorch/mnist.py --elastic

Needs data/mnist/mnist.bin (scripts/setup.sh fetches the digits, scripts/build.sh
converts them); from a build tree, ./build/trainrun gives its ranks the build's
package (run alone: PYTHONPATH=<build>/integrations/python). Rank 0
prints per-epoch loss and held-out accuracy averaged over the ranks, writes a
checkpoint (--checkpoint) and, last, a line `accuracy X`.
"""
import argparse
import os
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

import trainrun.torch as hvd

MAGIC = b'TRMNIST1'
PIXELS = 28 * 28


def load_digits(path):
    """(train, held_out) TensorDatasets; digit i is held out when i % 5 == 4 (as in C++)."""
    with open(path, 'rb') as f:
        data = f.read()
    if data[:8] != MAGIC:
        raise SystemExit(f'{path}: not an MNIST file made by mnist_convert')
    count = int.from_bytes(data[8:12], 'little')
    records = np.frombuffer(data, dtype=np.uint8, count=count * (1 + PIXELS), offset=12).reshape(count, 1 + PIXELS)
    labels = torch.from_numpy(records[:, 0].astype(np.int64))
    images = torch.from_numpy(records[:, 1:].astype(np.float32) / 255.0).reshape(count, 1, 28, 28)
    held_out = torch.arange(count) % 5 == 4
    return (TensorDataset(images[~held_out], labels[~held_out]),
            TensorDataset(images[held_out], labels[held_out]))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 5)
        self.conv2 = nn.Conv2d(8, 16, 5)
        self.fc1 = nn.Linear(16 * 4 * 4, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


def metric_average(value, name):
    return hvd.allreduce(torch.tensor(value), name=name).item()


def held_out_metrics(model, held_out, sampler):
    """(mean loss, accuracy) over this rank's share of the held-out digits."""
    model.eval()
    correct, loss, seen = 0.0, 0.0, 0
    with torch.no_grad():
        for x, y in DataLoader(held_out, batch_size=500, sampler=sampler):
            out = model(x)
            loss += F.cross_entropy(out, y, reduction='sum').item()
            correct += (out.argmax(1) == y).sum().item()
            seen += len(y)
    return loss / seen, correct / seen


def evaluate(model, held_out):
    sampler = DistributedSampler(held_out, num_replicas=hvd.size(), rank=hvd.rank(), shuffle=False)
    loss, accuracy = held_out_metrics(model, held_out, sampler)
    return metric_average(loss, 'avg_loss'), metric_average(accuracy, 'avg_accuracy')


def run_epoch(model, optimizer, loader, after_step=None):
    model.train()
    for i, (x, y) in enumerate(loader):
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
        if after_step:
            after_step(i)


def end_epoch(args, epoch, model, optimizer, held_out, images_per_s):
    """Held-out metrics over all ranks; rank 0 prints them and checkpoints."""
    loss, accuracy = evaluate(model, held_out)
    if hvd.rank() == 0:
        print(f'epoch {epoch}/{args.epochs}: held-out loss {loss:.4f}, accuracy {100 * accuracy:.2f}%, '
              f'{images_per_s:.0f} images/s', flush=True)
        if args.checkpoint:
            save_checkpoint({'epoch': epoch, 'model': model.state_dict(), 'optimizer': optimizer.state_dict()},
                            args.checkpoint)
    return loss, accuracy


def save_checkpoint(state, path):
    """Whole or not at all, and never through a link another user planted at
    the name: a temporary file of an unpredictable name, created exclusively
    in the checkpoint's folder, then renamed over it."""
    fd, temporary = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix='.checkpoint-')
    try:
        with os.fdopen(fd, 'wb') as f:
            torch.save(state, f)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def train_fixed(args, model, optimizer, train_set, held_out):
    sampler = DistributedSampler(train_set, num_replicas=hvd.size(), rank=hvd.rank(), seed=args.seed)
    loader = DataLoader(train_set, batch_size=args.batch_size, sampler=sampler)
    loss, accuracy = float('nan'), 0.0
    for epoch in range(1, args.epochs + 1):
        sampler.set_epoch(epoch)
        start = time.perf_counter()
        run_epoch(model, optimizer, loader)
        images = len(sampler) * hvd.size() / (time.perf_counter() - start)
        loss, accuracy = end_epoch(args, epoch, model, optimizer, held_out, images)
    return loss, accuracy


def train_elastic(args, model, optimizer, train_set, held_out):
    """Horovod's elastic workflow: the state is committed every --commit-every
    batches and at each epoch's end; a lost rank costs the batches since."""
    sampler = hvd.elastic.ElasticSampler(train_set, seed=args.seed)
    state = hvd.elastic.TorchState(model=model, optimizer=optimizer, sampler=sampler, epoch=1,
                                   loss=float('nan'), accuracy=0.0)

    def rescale_lr():
        for group in optimizer.param_groups:
            group['lr'] = args.lr * hvd.size()
        if hvd.rank() == 0:
            print(f'elastic: generation {hvd.elastic.generation()}, {hvd.size()} ranks, resuming at epoch '
                  f'{state.epoch} with {len(state.sampler) * hvd.size()} digits left', flush=True)
    state.register_reset_callbacks([rescale_lr])

    def after_step(i):
        state.sampler.record_batch(i, args.batch_size)
        if (i + 1) % args.commit_every == 0:
            state.commit()

    @hvd.elastic.run
    def train(state):
        while state.epoch <= args.epochs:
            images = len(state.sampler) * hvd.size()
            start = time.perf_counter()
            run_epoch(model, optimizer, DataLoader(train_set, batch_size=args.batch_size, sampler=state.sampler),
                      after_step)
            images /= time.perf_counter() - start
            state.loss, state.accuracy = end_epoch(args, state.epoch, model, optimizer, held_out, images)
            state.epoch += 1
            state.sampler.set_epoch(state.epoch)
            state.commit()
    train(state)
    return state.loss, state.accuracy


def train(args):
    """The whole job on one rank; returns rank 0's final metrics."""
    hvd.init()
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    train_set, held_out = load_digits(args.data)
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr * hvd.size(), momentum=args.momentum)
    if not args.elastic:  # elastic: the TorchState's sync does it
        hvd.broadcast_parameters(model.state_dict(), root_rank=0)
        hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(),
                                         compression=compression, op=hvd.Average)
    if hvd.rank() == 0:
        print(f'mnist.py: {hvd.size()} rank(s), {len(train_set)} training digits, {len(held_out)} held out; '
              f'batch {args.batch_size} per rank, lr {args.lr * hvd.size():g}', flush=True)
    run = train_elastic if args.elastic else train_fixed
    loss, accuracy = run(args, model, optimizer, train_set, held_out)
    if hvd.rank() == 0:
        print(f'accuracy {accuracy:.4f}', flush=True)
    return {'loss': loss, 'accuracy': accuracy}


def parse_args(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--data', default=os.path.join(here, '..', '..', 'data', 'mnist', 'mnist.bin'))
    p.add_argument('--epochs', type=int, default=3)
    p.add_argument('--batch-size', type=int, default=32, help='per rank')
    p.add_argument('--lr', type=float, default=0.025, help='before scaling by the number of ranks')
    p.add_argument('--momentum', type=float, default=0.9)
    p.add_argument('--seed', type=int, default=42)
    p.add_argument('--threads', type=int, default=1, help='torch threads per rank')
    p.add_argument('--fp16-allreduce', action='store_true', help='fp16 compression of gradients')
    p.add_argument('--checkpoint', default='', help='rank 0 saves model and optimizer here after each epoch')
    p.add_argument('--elastic', action='store_true',
                   help='train through hvd.elastic.run (launch with trainrun --min-np/--max-np)')
    p.add_argument('--commit-every', type=int, default=20, metavar='N', help='--elastic: commit every N batches')
    p.add_argument('--runner', type=int, default=0, metavar='NP',
                   help='start the job itself through trainrun.Runner(np=NP) (NP < 0: on this machine)')
    return p.parse_args(argv)


if __name__ == '__main__':
    args = parse_args()
    if args.runner:
        import trainrun
        result = trainrun.Runner(np=args.runner).run(train, args=args)
        print(f'Runner: rank 0 returned {result}')
    else:
        train(args)
