#!/usr/bin/env python3
"""What DDP costs a step, and where it goes: a 21 M-parameter MLP (five
2048x2048 layers, 84 MB of float32 gradients a step) stepped without
communication, with DistributedDataParallel on backend "trainrun" (and on
"trainrun" with torch's own memory for its buckets) and on torch's "gloo",
in one job (rounds alternating, so drift in the machine's load
hits all three alike). Runs under any launcher that sets up env://:

    PYTHONPATH=build/integrations/python build/trainrun --local -np 2 /usr/bin/python3 tests/bench/ddp_cost.py
    PYTHONPATH=build/integrations/python torchrun --standalone --nproc_per_node 2 --redirects 1 --tee 1 \
        --log_dir /tmp/logs tests/bench/ddp_cost.py

Tables (rank 0; medians over steps of the slowest rank):
  step        ms per step for "none" (the same forward and backward, no DDP),
              DDP on trainrun, on trainrun with its buckets in torch's memory
              ("trainrun copy": as before they came from trainrun's heap) and
              on gloo; cost = DDP step - none step, and each cost against
              gloo's
  breakdown   one DDP step split at the moments a timing comm hook sees
              (each bucket's allreduce issued and done): forward; backward
              until the last bucket is ready (autograd, DDP's copies of the
              gradients into its buckets, slowed by allreduces running
              beside it); the wait for the last allreduce after that; DDP's
              finish (the buckets copied back into .grad); the allreduces'
              own time (from each issue, or the previous one's end, to its
              end: the backend's ops run one after another) beside the same
              buckets allreduced with nothing else running
The breakdown's hook allreduces without DDP's division by the world size (a
timing run: the parameters are never stepped), so its step is DDP's path but
for that one multiply.

Options: --steps N per round (10), --rounds R (8), --threads T (1),
--layers L (5), --width W (2048), --batch B (1: the step is mostly DDP's;
Debian's torch multiplies on one generic BLAS thread, ~80 ms a layer at 32),
--bucket-mb M (DDP's 25). docs/benchmarks.md has the figures.
A benchmark, never a test.
"""
import argparse
import statistics
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel

import trainrun.torch.distributed  # noqa: F401  (registers the backend)
from trainrun import _c10d


def slowest(value, group=None):
    t = torch.tensor([value], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=group)
    return t.item()


def mlp(args):
    torch.manual_seed(0)
    layers = []
    for _ in range(args.layers):
        layers += [nn.Linear(args.width, args.width), nn.ReLU()]
    return nn.Sequential(*layers)


class Timeline:
    """A comm hook that allreduces each bucket (sum) and notes when DDP
    issued it, when it finished, and its bytes."""

    def __init__(self, group):
        self.group = group
        self.issued, self.done, self.nbytes = [], [], []

    def reset(self):
        self.issued, self.done, self.nbytes = [], [], []

    def hook(self, _state, bucket):
        tensor = bucket.buffer()
        self.issued.append(time.perf_counter())
        self.nbytes.append(tensor.numel() * tensor.element_size())
        future = dist.all_reduce(tensor, group=self.group, async_op=True).get_future()

        def finished(f):
            self.done.append(time.perf_counter())
            return f.value()[0]
        return future.then(finished)

    def busy(self):
        """Seconds the allreduces ran: each from its issue or the previous end."""
        total, previous = 0.0, 0.0
        for issued, done in zip(self.issued, sorted(self.done)):
            total += done - max(issued, previous)
            previous = done
        return total


def step(model, x):
    model.zero_grad(set_to_none=True)
    start = time.perf_counter()
    loss = model(x).square().mean()
    forward = time.perf_counter()
    loss.backward()
    return start, forward, time.perf_counter()


def time_steps(models, x, args):
    """{name: median step seconds of the slowest rank}."""
    seconds = {name: [] for name in models}
    for model in models.values():
        for _ in range(3):
            step(model, x)
    for _ in range(args.rounds):
        for name, model in models.items():
            dist.barrier()
            for _ in range(args.steps):
                start, _, end = step(model, x)
                seconds[name].append(end - start)
    return {name: slowest(statistics.median(s)) for name, s in seconds.items()}


def breakdown(hooked, x, args):
    """{name: {part: median seconds, slowest rank}} of each hooked DDP's
    steps, rounds alternating."""
    names = ('forward', 'backward to last bucket', 'wait for last allreduce', 'finish', 'allreduces (in the step)')
    parts = {name: {k: [] for k in names} for name in hooked}
    for model, _ in hooked.values():
        for _ in range(3):
            step(model, x)
    for _ in range(args.rounds):
        for name, (model, timeline) in hooked.items():
            dist.barrier()
            for _ in range(args.steps):
                timeline.reset()
                start, forward, end = step(model, x)
                last_ready, last_done = timeline.issued[-1], max(timeline.done)
                p = parts[name]
                p['forward'].append(forward - start)
                p['backward to last bucket'].append(last_ready - forward)
                p['wait for last allreduce'].append(last_done - last_ready)
                p['finish'].append(end - last_done)
                p['allreduces (in the step)'].append(timeline.busy())
    result = {name: {k: slowest(statistics.median(v)) for k, v in p.items()} for name, p in parts.items()}
    for name, (_, timeline) in hooked.items():
        result[name]['allreduces (nothing beside)'] = alone(timeline, args, in_heap=name == 'trainrun')
    return result


def alone(timeline, args, in_heap):
    """The step's buckets allreduced back to back through the same group
    (`in_heap`: from trainrun's heap, as DDP's are)."""
    with _c10d.HeapScope(timeline.group if in_heap else None):
        buckets = [torch.ones(n // 4) for n in timeline.nbytes]
    seconds = []
    for _ in range(args.rounds):
        dist.barrier()
        start = time.perf_counter()
        for _ in range(args.steps):
            for b in buckets:
                dist.all_reduce(b, group=timeline.group)
        seconds.append((time.perf_counter() - start) / args.steps)
    return slowest(statistics.median(seconds))


def ddp(name, group, args):
    """DDP over `group`; "trainrun copy": with its buckets in torch's own
    memory, as before trainrun.torch.distributed put them in the heap (torch's
    Reducer unwrapped), so that the allreduce copies them through the segment."""
    wrapped = dist.Reducer
    if name == 'trainrun copy':
        dist.Reducer = wrapped.__mro__[1]
    try:
        return DistributedDataParallel(mlp(args), process_group=group, bucket_cap_mb=args.bucket_mb)
    finally:
        dist.Reducer = wrapped


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--steps', type=int, default=10)
    p.add_argument('--rounds', type=int, default=8)
    p.add_argument('--threads', type=int, default=1)
    p.add_argument('--layers', type=int, default=5)
    p.add_argument('--width', type=int, default=2048)
    p.add_argument('--batch', type=int, default=1)
    p.add_argument('--bucket-mb', type=float, default=25)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    dist.init_process_group('trainrun')
    groups = {'trainrun': dist.distributed_c10d._get_default_group(), 'gloo': dist.new_group(backend='gloo')}
    x = torch.rand(args.batch, args.width, generator=torch.Generator().manual_seed(dist.get_rank()))
    groups['trainrun copy'] = groups['trainrun']
    models = {'none': mlp(args)}
    for name in groups:
        models[name] = ddp(name, groups[name], args)
    median = time_steps(models, x, args)
    hooked = {}
    for name, pg in groups.items():
        hooked[name] = (ddp(name, pg, args), Timeline(pg))
        hooked[name][0].register_comm_hook(None, hooked[name][1].hook)
    parts = breakdown(hooked, x, args)
    buckets = len(hooked['trainrun'][1].nbytes)
    if dist.get_rank() != 0:
        return
    params = sum(q.numel() for q in models['none'].parameters())
    print(f'{dist.get_world_size()} ranks, {params / 1e6:.1f} M parameters ({4 * params / 1e6:.0f} MB of gradients), '
          f'batch {args.batch}, {args.threads} thread(s)/rank, {args.steps} steps x {args.rounds} rounds')
    print('\nstep, ms (slowest rank, median)')
    print(f'  {"":10} {"step":>9} {"cost":>9}')
    for name, s in median.items():
        cost = '' if name == 'none' else f'{1000 * (s - median["none"]):9.2f}'
        print(f'  {name:10} {1000 * s:9.2f} {cost}')
    costs = {name: median[name] - median['none'] for name in groups}
    print(f'  cost / gloo cost: trainrun {costs["trainrun"] / costs["gloo"]:.2f}, '
          f'trainrun copy {costs["trainrun copy"] / costs["gloo"]:.2f}')
    print(f'\nDDP step, broken down, ms ({buckets} buckets)')
    print(f'  {"":28}' + ''.join(f'{name:>15}' for name in groups))
    for part in parts['trainrun']:
        print(f'  {part:28}' + ''.join(f'{1000 * parts[name][part]:15.2f}' for name in groups))


if __name__ == '__main__':
    main()
