"""trainrun.torch on CUDA tensors, run by scripts/gpu_checks.sh on a machine
with a GPU, under the launcher (one process per rank):

    trainrun --local -np N python3 cuda_tensors_check.py [--device cpu]

Every collective of the Horovod API on tensors of the rank's GPU, the result
checked on every rank (and that it stays on the GPU); a tensor written on a
side stream; one DistributedOptimizer step of a CUDA model against the
step computed here from every rank's batch; then the time of allreduce_ on
CUDA against host tensors of the same size. Ends with
`cuda tensors: rank R of N (BACKEND): passed` (exit 0) or names each failed
check (exit 1); with no GPU, says so and exits 77. --device cpu runs the same
checks on host tensors (a dry run of this script where there is no GPU).
"""
import sys
import time

import torch

import trainrun.torch as hvd

failures = []


def check(name, got, want, exact=True):
    """Records a failure unless `got` equals `want` (both tensors) on `want`'s device."""
    why = None
    if got.device != want.device:
        why = f'result on {got.device}, expected on {want.device}'
    elif got.dtype != want.dtype or got.shape != want.shape:
        why = f'got {got.dtype} {tuple(got.shape)}, expected {want.dtype} {tuple(want.shape)}'
    elif not (torch.equal(got, want) if exact else torch.allclose(got, want, rtol=1e-5, atol=1e-6)):
        why = f'wrong values: {got.flatten()[:4].tolist()}... expected {want.flatten()[:4].tolist()}...'
    if why:
        failures.append(f'{name}: {why}')
    print(f'  {"FAIL" if why else "ok  "} {name}', flush=True)


def collectives(dev, r, n):
    ramp = torch.arange(1000, dtype=torch.float32, device=dev)
    check('allreduce sum float32', hvd.allreduce(ramp * (r + 1), op=hvd.Sum), ramp * (n * (n + 1) // 2))
    check('allreduce average float32', hvd.allreduce(ramp * (r + 1)), ramp * ((n + 1) / 2), exact=False)
    half = torch.ones(333, dtype=torch.float16, device=dev)
    hvd.allreduce_(half, op=hvd.Sum, prescale_factor=0.5, postscale_factor=4.0)
    check('allreduce_ float16, prescale and postscale', half, torch.full((333,), 2.0 * n, dtype=torch.float16, device=dev))
    check('allreduce max int64', hvd.allreduce(torch.full((7,), r, dtype=torch.int64, device=dev), op=hvd.Max),
          torch.full((7,), n - 1, dtype=torch.int64, device=dev))
    sizes = [1, 1000, 70000]
    group = hvd.grouped_allreduce([torch.full((s,), float(r + 1), device=dev) for s in sizes], op=hvd.Sum)
    for s, got in zip(sizes, group):
        check(f'grouped_allreduce member of {s}', got, torch.full((s,), float(n * (n + 1) // 2), device=dev))
    # In place on views 1 element (4 bytes) past their storage's start: the
    # engine's fusion copies then take their unaligned path.
    bases = [torch.zeros(s + 1, device=dev) for s in (3, 1000, 70001)]
    views = [b[1:] for b in bases]
    for v in views:
        v.fill_(float(r + 1))
    hvd.synchronize(hvd.grouped_allreduce_async_(views, op=hvd.Sum))
    for v, base in zip(views, bases):
        want = torch.cat([torch.zeros(1, device=dev), torch.full((v.numel(),), float(n * (n + 1) // 2), device=dev)])
        check(f'grouped_allreduce_ in place, a view of {v.numel()} at an odd offset', base, want)
    big = torch.full((16 << 20,), float(r + 1), device=dev)  # 64 MiB
    hvd.allreduce_(big, op=hvd.Sum)
    check('allreduce_ 64 MiB', big, torch.full((16 << 20,), float(n * (n + 1) // 2), device=dev))

    b = torch.full((5, 3), float(r), dtype=torch.bfloat16, device=dev)
    hvd.broadcast_(b, root_rank=n - 1)
    check('broadcast_ bfloat16 from the last rank', b, torch.full((5, 3), float(n - 1), dtype=torch.bfloat16, device=dev))
    check('broadcast int32', hvd.broadcast(torch.full((4,), r, dtype=torch.int32, device=dev), root_rank=0),
          torch.zeros(4, dtype=torch.int32, device=dev))

    gathered = hvd.allgather(torch.full((r + 1, 3), float(r), device=dev))
    want = torch.cat([torch.full((q + 1, 3), float(q), device=dev) for q in range(n)])
    check('allgather, rows differ by rank', gathered, want)
    send = torch.arange(2 * n, dtype=torch.float32, device=dev) + 100 * r
    out, received = hvd.alltoall(send, splits=torch.full((n,), 2, dtype=torch.int32, device=dev))
    want = torch.cat([torch.arange(2 * r, 2 * r + 2, dtype=torch.float32, device=dev) + 100 * q for q in range(n)])
    check('alltoall with splits', out, want)
    check('alltoall received splits, on the splits\' device', received, torch.full((n,), 2, dtype=torch.int32, device=dev))
    shard = hvd.reducescatter(torch.full((2 * n, 4), float(r + 1), device=dev), op=hvd.Sum)
    check('reducescatter sum', shard, torch.full((2, 4), float(n * (n + 1) // 2), device=dev))

    if dev.type == 'cuda':
        side = torch.cuda.Stream(dev)
        with torch.cuda.stream(side):
            m = torch.full((2048, 2048), 1.0 / 2048, device=dev)
            for _ in range(20):  # long enough to be still running when allreduce starts
                m = m @ m * 2048 / 2048
            summed = hvd.allreduce(m * (r + 1), op=hvd.Sum)
        torch.cuda.synchronize(dev)
        check('allreduce of a tensor written on a side stream', summed,
              torch.full((2048, 2048), n * (n + 1) / 2 / 2048, device=dev), exact=False)


def model_for(dev):
    torch.manual_seed(1234)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)).to(dev)


def batch_of(rank, dev):
    g = torch.Generator().manual_seed(100 + rank)
    return torch.randn(32, 8, generator=g).to(dev), torch.randn(32, 4, generator=g).to(dev)


def optimizer_step(dev, r, n):
    model = model_for(dev)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters())
    x, y = batch_of(r, dev)
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
    # The same step here: every rank's gradient, averaged.
    ref = model_for(dev)
    grads = [torch.zeros_like(p) for p in ref.parameters()]
    for q in range(n):
        ref.zero_grad()
        xq, yq = batch_of(q, dev)
        torch.nn.functional.mse_loss(ref(xq), yq).backward()
        for g, p in zip(grads, ref.parameters()):
            g += p.grad / n
    with torch.no_grad():
        for p, g in zip(ref.parameters(), grads):
            p -= 0.1 * g
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        check(f'DistributedOptimizer step: {name}', p.detach(), q.detach(), exact=False)


def timings(dev, r):
    """allreduce_ on the device against host tensors of the same size: rank 0
    prints the median of 10 (after one warm-up) of each."""
    if dev.type != 'cuda':
        return
    if r == 0:
        print(f'{"bytes":>10} {"CUDA tensor us":>15} {"host tensor us":>15} {"CUDA/host":>10}', flush=True)
    for count in (1024, 256 << 10, 16 << 20):
        row = []
        for where in (dev, torch.device('cpu')):
            t = torch.ones(count, device=where)
            runs = []
            for _ in range(11):
                hvd.barrier()
                start = time.perf_counter()
                hvd.allreduce_(t, op=hvd.Sum, name=f'time.{where.type}.{count}')
                runs.append(time.perf_counter() - start)
            row.append(sorted(runs[1:])[5] * 1e6)
        if r == 0:
            print(f'{count * 4:>10} {row[0]:>15.0f} {row[1]:>15.0f} {row[0] / row[1]:>10.2f}', flush=True)


def main():
    on_cpu = '--device' in sys.argv and sys.argv[sys.argv.index('--device') + 1] == 'cpu'
    if not on_cpu and not torch.cuda.is_available():
        print('cuda_tensors_check: no CUDA device visible to torch: nothing checked')
        return 77
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    dev = torch.device('cpu') if on_cpu else torch.device('cuda', hvd.local_rank() % torch.cuda.device_count())
    if dev.type == 'cuda':
        torch.cuda.set_device(dev)
    backend = hvd.mpi_ops._core.backend_name()
    print(f'rank {r} of {n}: {dev} ({torch.cuda.get_device_name(dev) if dev.type == "cuda" else "host"}), '
          f'torch {torch.__version__}, backend {backend}', flush=True)
    collectives(dev, r, n)
    optimizer_step(dev, r, n)
    timings(dev, r)
    hvd.shutdown()
    for f in failures:
        print(f'cuda_tensors_check: rank {r}: FAILED {f}')
    print(f'cuda tensors: rank {r} of {n} ({backend}, {dev.type}): {"passed" if not failures else "FAILED"}')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
