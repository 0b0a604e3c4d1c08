"""The worker of tests/integrations/python/elastic/test_elastic_jobs.py: a Horovod-style
elastic training script (hvd.elastic.run, TorchState, ElasticSampler,
DistributedOptimizer) fitting a linear model to exact synthetic data.

What the tests read (trainrun tags each line with "[worker id] "):
  rank 0, after every step:  step S size N gen G epoch E t_ms T
                             (T: wall clock ms, as tests/bench reads it)
  rank 0, after each epoch:  epoch E processed P of D
  rank 0, on a wrong result: wrong result ...
  every worker, last:        done step S size N params P resets R loss L
(P is "agree" when every rank holds the same parameters; R lists the sizes
the reset callbacks saw.) --exit-at STEP:WORKER:CODE makes that worker exit
with CODE once it has done step STEP.
"""
import argparse
import os
import sys
import time

import torch
from torch.utils.data import DataLoader, TensorDataset

import trainrun
import trainrun.torch as hvd


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument('--epochs', type=int, default=3)
    p.add_argument('--samples', type=int, default=480)
    p.add_argument('--batch', type=int, default=4)
    p.add_argument('--commit-every', type=int, default=2)
    p.add_argument('--sleep-ms', type=int, default=0)
    p.add_argument('--exit-at', default='')
    return p.parse_args()


def main():
    args = parse_args()
    torch.set_num_threads(1)
    hvd.init()
    worker = int(os.environ.get('TRAINRUN_WORKER_ID', os.environ.get('TRAINRUN_RANK', '0')))
    exit_at = [int(v) for v in args.exit_at.split(':')] if args.exit_at else None

    generator = torch.Generator().manual_seed(7)
    x = torch.randn(args.samples, 8, generator=generator)
    y = x @ torch.arange(1.0, 9.0).unsqueeze(1)
    dataset = TensorDataset(x, y)
    torch.manual_seed(hvd.rank())  # ranks start apart: sync() must make them equal
    model = torch.nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.5)
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    sampler = hvd.elastic.ElasticSampler(dataset, shuffle=True, seed=3)
    state = hvd.elastic.TorchState(model=model, optimizer=optimizer, sampler=sampler, epoch=0, step=0)
    resets = []
    state.register_reset_callbacks([lambda: resets.append(hvd.size())])

    @hvd.elastic.run
    def train(state):
        loss = torch.tensor(float('nan'))
        while state.epoch < args.epochs:
            loader = DataLoader(dataset, batch_size=args.batch, sampler=state.sampler)
            for i, (xb, yb) in enumerate(loader):
                optimizer.zero_grad()
                loss = torch.nn.functional.mse_loss(model(xb), yb)
                loss.backward()
                optimizer.step()
                check = hvd.allreduce(torch.full((4,), float(hvd.rank() + 1)), op=hvd.Sum, name='check')
                want = hvd.size() * (hvd.size() + 1) / 2
                if hvd.rank() == 0 and not torch.all(check == want):
                    print(f'wrong result {check.tolist()} for size {hvd.size()}', flush=True)
                state.sampler.record_batch(i, args.batch)
                state.step += 1
                if hvd.rank() == 0:
                    print(f'step {state.step} size {hvd.size()} gen {trainrun.elastic.generation()} '
                          f'epoch {state.epoch} t_ms {time.time_ns() // 1_000_000}', flush=True)
                if exit_at and exit_at[0] == state.step and exit_at[1] == worker:
                    sys.exit(exit_at[2])
                time.sleep(args.sleep_ms / 1000)
                if state.step % args.commit_every == 0:
                    state.commit()
            if hvd.rank() == 0:
                print(f'epoch {state.epoch} processed {len(state.sampler.processed_indices)} of {len(dataset)}',
                      flush=True)
            state.epoch += 1
            state.sampler.set_epoch(state.epoch)
            state.commit()
        return loss.item()

    loss = train(state)
    params = torch.cat([p.detach().flatten() for p in model.parameters()]).unsqueeze(0)
    gathered = hvd.allgather(params, name='final_params')
    agree = all(torch.equal(gathered[0], row) for row in gathered)
    print(f'done step {state.step} size {hvd.size()} params {"agree" if agree else "differ"} '
          f'resets {resets} loss {loss:.6f}', flush=True)


if __name__ == '__main__':
    main()
