"""A DDP job for the launcher tests: 5 SGD steps of a small model on rank-dependent
data, then a digest of the parameters, which every launcher and backend must
agree on. Runs as a script under torchrun, trainrun or by hand (env:// from
RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), or with --spawn under
torch.multiprocessing.spawn (--init tcp://... or file://...).

--kill-rank R: rank R writes the time to --mark and dies of SIGKILL at step 2;
the others print when and how their step failed and exit 3."""
import argparse
import hashlib
import os
import signal
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import trainrun.torch.distributed  # noqa: F401  (registers the backend "trainrun")

STEPS = 5


def parse():
    parser = argparse.ArgumentParser()
    parser.add_argument('--backend', default='trainrun')
    parser.add_argument('--spawn', type=int, default=0, help='start this many ranks with mp.spawn')
    parser.add_argument('--init', help='init_method (with --spawn)')
    parser.add_argument('--kill-rank', type=int, default=-1)
    parser.add_argument('--mark', help='where the killed rank writes the time it died')
    parser.add_argument('--tag', help='ignored: names the job\'s processes for the tests')
    return parser.parse_args()


def step(ddp, optimizer, generator):
    x = torch.randn(16, 32, generator=generator)
    y = torch.randn(16, 4, generator=generator)
    optimizer.zero_grad()
    torch.nn.functional.mse_loss(ddp(x), y).backward()
    optimizer.step()


def say(line):
    os.write(1, (line + '\n').encode())  # one write: mp.spawn's ranks share stdout


def die(mark):
    with open(mark, 'w') as f:
        f.write(repr(time.time()))
    os.kill(os.getpid(), signal.SIGKILL)


def train(spawned_rank, args):
    if args.spawn:
        dist.init_process_group(args.backend, init_method=args.init, rank=spawned_rank, world_size=args.spawn)
    else:
        dist.init_process_group(args.backend)
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    generator = torch.Generator().manual_seed(100 + rank)
    if args.kill_rank >= 0 and rank != args.kill_rank:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the launcher's SIGTERM must not hide the failure
    for s in range(STEPS):
        if s == 2 and rank == args.kill_rank:
            die(args.mark)
        try:
            step(ddp, optimizer, generator)
        except RuntimeError as e:
            say(f'rank {rank} failed at {time.time()!r}: {e}')
            sys.exit(3)
    digest = hashlib.sha256(b''.join(p.detach().numpy().tobytes() for p in model.parameters())).hexdigest()[:16]
    say(f'rank {rank} of {dist.get_world_size()} params {digest}')


def main():
    args = parse()
    if args.spawn:
        mp.spawn(train, args=(args,), nprocs=args.spawn)
    else:
        train(0, args)


if __name__ == '__main__':
    main()
