"""torch.distributed's backend "trainrun" on CUDA tensors, run by
scripts/gpu_checks.sh on a machine with a GPU, under the launcher:

    trainrun --local -np N python3 c10d_cuda_check.py [--device cpu]

Every collective torch.distributed offers (all_reduce, broadcast, reduce,
all_gather, all_gather_into_tensor, all_gather_coalesced, gather, scatter,
reduce_scatter_tensor, all_to_all_single, barrier, all_reduce of a sparse
tensor) on tensors of the rank's GPU, each result
checked on every rank and on the GPU; a tensor written on a side stream
after a long kernel, reduced from that stream (the op must wait for the
kernel); an async op's Work and Future; three DistributedDataParallel steps
of a CUDA model against the same steps computed here from every rank's
batch. Ends with `c10d cuda: rank R of N (DEVICE): passed` (exit 0) or
names each failed check (exit 1); with no GPU, says so and exits 77.
--device cpu runs the same checks on host tensors (a dry run where there
is no GPU).
"""
import os
import sys
import warnings

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

import trainrun.torch.distributed  # noqa: F401  registers the backend

failures = []


def check(name, got, want):
    why = None
    if got.device != want.device:
        why = f'result on {got.device}, expected on {want.device}'
    elif not torch.allclose(got, want, rtol=1e-5, atol=1e-6):
        why = f'wrong values: {got.flatten()[:4].tolist()}... expected {want.flatten()[:4].tolist()}...'
    if why:
        failures.append(f'{name}: {why}')
    print(f'  {"FAIL" if why else "ok  "} {name}', flush=True)


def collectives(dev, r, n):
    def full(value, count=6):
        return torch.full((count,), float(value), device=dev)

    t = full(r + 1)
    dist.all_reduce(t)
    check('all_reduce sum', t, full(n * (n + 1) / 2))
    t = full(r + 1)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    check('all_reduce max', t, full(n))
    t = full(r + 1)
    dist.broadcast(t, src=n - 1)
    check('broadcast', t, full(n))
    t = full(r + 1)
    dist.reduce(t, dst=0)
    if r == 0:
        check('reduce', t, full(n * (n + 1) / 2))
    outs = [torch.empty(6, device=dev) for _ in range(n)]
    dist.all_gather(outs, full(r))
    check('all_gather', torch.stack(outs), torch.stack([full(i) for i in range(n)]))
    flat = torch.empty(6 * n, device=dev)
    dist.all_gather_into_tensor(flat, full(r))
    check('all_gather_into_tensor', flat, torch.cat([full(i) for i in range(n)]))
    gathered = [torch.empty(6, device=dev) for _ in range(n)] if r == 0 else None
    dist.gather(full(r), gather_list=gathered, dst=0)
    if r == 0:
        check('gather', torch.stack(gathered), torch.stack([full(i) for i in range(n)]))
    out = torch.empty(6, device=dev)
    dist.scatter(out, scatter_list=[full(10 + i) for i in range(n)] if r == 0 else None, src=0)
    check('scatter', out, full(10 + r))
    out = torch.empty(6, device=dev)
    dist.reduce_scatter_tensor(out, torch.cat([full(i + r) for i in range(n)]))
    check('reduce_scatter_tensor', out, full(n * r + n * (n - 1) / 2))  # block r holds r + rank
    out = torch.empty(2 * n, device=dev)
    dist.all_to_all_single(out, torch.cat([torch.full((2,), float(10 * r + i), device=dev) for i in range(n)]))
    check('all_to_all_single', out, torch.cat([torch.full((2,), float(10 * i + r), device=dev) for i in range(n)]))
    coalesced_and_sparse(dev, r, n, full)
    dist.barrier()


def coalesced_and_sparse(dev, r, n, full):
    lists = [[torch.empty(3, device=dev), torch.empty(2, 2, device=dev)] for _ in range(n)]
    with warnings.catch_warnings():  # torch 1.13: "all_gather_coalesced will be deprecated"
        warnings.simplefilter('ignore')
        dist.all_gather_coalesced(lists, [full(r, 3), torch.full((2, 2), float(-r), device=dev)])
    check('all_gather_coalesced', torch.stack([torch.cat([a, b.flatten()]) for a, b in lists]),
          torch.stack([torch.cat([full(i, 3), full(-i, 4)]) for i in range(n)]))
    # Rank r sets row r % 4 and row 4 (every rank's): the coalesced sum.
    sparse = torch.sparse_coo_tensor(torch.tensor([[r % 4, 4]], device=dev), torch.ones(2, 3, device=dev), (5, 3))
    dist.all_reduce(sparse)
    want = torch.zeros(5, 3, device=dev)
    for i in range(n):
        want[i % 4] += 1
        want[4] += 1
    check('all_reduce of a sparse tensor', sparse.to_dense(), want)


def side_stream_and_async(dev, r, n):
    if dev.type != 'cuda':
        stream_context = None
    else:
        stream_context = torch.cuda.stream(torch.cuda.Stream(dev))
    t = torch.zeros(1 << 20, device=dev)
    if stream_context:
        with stream_context:
            torch.cuda._sleep(100_000_000)  # ~50 ms of GPU time before the fill
            t.fill_(r + 1)
            work = dist.all_reduce(t, async_op=True)
        work.wait()
    else:
        t.fill_(r + 1)
        work = dist.all_reduce(t, async_op=True)
        work.wait()
    check('all_reduce of a side stream\'s tensor, after wait()', t, torch.full_like(t, n * (n + 1) / 2))
    u = torch.full((8,), float(r), device=dev)
    future = dist.all_reduce(u, async_op=True).get_future()
    check('all_reduce future value', future.wait()[0], torch.full_like(u, n * (n - 1) / 2))


def ddp_steps(dev, r, n):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)).to(dev)
    reference = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)).to(dev)
    reference.load_state_dict(model.state_dict())
    ddp = DistributedDataParallel(model, device_ids=[dev.index] if dev.type == 'cuda' else None)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1)
    for step in range(3):
        batches = [torch.randn(8, 16, generator=torch.Generator().manual_seed(100 * step + k)).to(dev)
                   for k in range(n)]
        opt.zero_grad()
        ddp(batches[r]).square().mean().backward()
        opt.step()
        # The same step from every rank's batch: the mean of the ranks' gradients.
        ref_opt.zero_grad()
        sum(reference(b).square().mean() for b in batches).div(n).backward()
        ref_opt.step()
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        check(f'DDP parameter {name} after 3 steps', p.detach(), q.detach())


def main():
    want_cpu = '--device' in sys.argv and sys.argv[sys.argv.index('--device') + 1] == 'cpu'
    if not want_cpu and not torch.cuda.is_available():
        print('c10d_cuda_check: skipped: torch sees no CUDA device')
        return 77
    dist.init_process_group('trainrun')
    r, n = dist.get_rank(), dist.get_world_size()
    if want_cpu:
        dev = torch.device('cpu')
    else:
        dev = torch.device('cuda', int(os.environ.get('LOCAL_RANK', 0)) % torch.cuda.device_count())
        torch.cuda.set_device(dev)
    collectives(dev, r, n)
    side_stream_and_async(dev, r, n)
    ddp_steps(dev, r, n)
    dist.destroy_process_group()
    if failures:
        print(f'c10d {dev.type}: rank {r} of {n}: {len(failures)} failed: ' + '; '.join(failures), flush=True)
        return 1
    print(f'c10d {dev.type}: rank {r} of {n} ({dev}): passed', flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
