#!/usr/bin/env python3
"""Start-up of a per-node job, trainrun beside torchrun, on the same three
network-namespace "pods" (one launcher per pod, as Kubeflow's PyTorchJob
starts them; no SSH): from the moment the three launchers are started to
the moment every one of the 3 x 2 ranks has finished its first allreduce
(one float), the latest rank's clock (one machine, one clock). The same
Python job under

  torchrun --nnodes 3 --rdzv-backend c10d --rdzv-endpoint h1:PORT ...   backend gloo
  trainrun --nnodes 3 --rdzv-backend c10d --rdzv-endpoint h1:PORT ...   backend gloo
  trainrun --nnodes 3 --rdzv-backend c10d --rdzv-endpoint h1:PORT ...   backend trainrun

runs alternate, ROUNDS times; medians and the ratio to torchrun's. Run it
as the tests' fixture makes the pods (root):

    build/tests/with_ssh_hosts /usr/bin/python3 tests/bench/per_node_startup.py --trainrun build/trainrun

A benchmark, never a test.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

JOB = r'''
import os, sys, time
import torch
import torch.distributed as dist
import trainrun.torch.distributed  # noqa: F401 (registers "trainrun")
dist.init_process_group(sys.argv[1])
t = torch.ones(1)
dist.all_reduce(t)
assert t.item() == dist.get_world_size()
with open(os.path.join(sys.argv[2], f"rank{dist.get_rank()}"), "w") as f:
    f.write(repr(time.time()))
dist.destroy_process_group()
'''


def pod(host, argv):
    """`argv` on host hN as a pod: its netns, hostname and /etc/hosts."""
    namespaces = os.environ['SSH_HOSTS_NETNS'].split(',')
    return ['ip', 'netns', 'exec', namespaces[host - 1], 'unshare', '--mount', '--uts', '/bin/sh', '-c',
            'mount --bind "$1" /etc/hosts && hostname "$2" && shift 2 && exec "$@"', 'sh',
            os.environ['SSH_HOSTS_ETC_HOSTS'], f'h{host}'] + argv


def launcher(kind, args, port, program, logs):
    """One pod's launcher for `program` (the job's arguments after python).
    Debian's torchrun 1.13 on Python 3.11 needs --redirects and --tee with --log_dir."""
    if kind == 'torchrun':
        return [sys.executable, '-m', 'torch.distributed.run', '--nnodes', '3', '--nproc_per_node', '2',
                '--rdzv_backend', 'c10d', '--rdzv_endpoint', f'h1:{port}', '--rdzv_id', f'bench{port}',
                '--redirects', '1', '--tee', '1', '--log_dir', logs] + program
    return [os.path.abspath(args.trainrun), '--nnodes', '3', '--nproc-per-node', '2', '--rdzv-backend', 'c10d',
            '--rdzv-endpoint', f'h1:{port}', '--rdzv-id', f'bench{port}', sys.executable] + program


def one_run(kind, backend, args, port, job, env):
    """Seconds from the launchers' start to the last rank's first allreduce."""
    with tempfile.TemporaryDirectory() as out:
        argv = launcher(kind, args, port, [job, backend, out], os.path.join(out, 'logs'))
        start = time.time()
        nodes = [subprocess.Popen(pod(h, argv), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
                 for h in (1, 2, 3)]
        errors = [n.communicate(timeout=300)[1] for n in nodes]
        if any(n.returncode for n in nodes):
            sys.exit(f'{kind} {backend}: exit {[n.returncode for n in nodes]}\n' + b''.join(errors).decode())
        times = [float(open(os.path.join(out, f'rank{r}')).read()) for r in range(6)]
        return max(times) - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--trainrun', required=True)
    parser.add_argument('--rounds', type=int, default=5)
    args = parser.parse_args()
    package = os.path.join(os.path.dirname(os.path.abspath(args.trainrun)), 'integrations', 'python')
    env = dict(os.environ, PYTHONPATH=package, OMP_NUM_THREADS='1')
    variants = [('torchrun', 'gloo'), ('trainrun', 'gloo'), ('trainrun', 'trainrun')]
    seconds = {v: [] for v in variants}
    with tempfile.TemporaryDirectory() as tmp:
        job = os.path.join(tmp, 'first_allreduce.py')
        with open(job, 'w') as f:
            f.write(JOB)
        port = 29600
        for _ in range(args.rounds):
            for v in variants:
                port += 1
                seconds[v].append(one_run(v[0], v[1], args, port, job, env))
    with open('/proc/loadavg') as f:
        load = f.read().split()[:3]
    print(f'3 pods x 2 ranks, {args.rounds} rounds alternating; load average {" ".join(load)}; '
          f'{os.cpu_count()} CPUs')
    print(f'{"launcher":<10} {"backend":<9} {"median s":>9} {"min s":>7} {"max s":>7} {"vs torchrun":>12}')
    base = statistics.median(seconds[variants[0]])
    for (kind, backend), values in seconds.items():
        median = statistics.median(values)
        print(f'{kind:<10} {backend:<9} {median:>9.3f} {min(values):>7.3f} {max(values):>7.3f} '
              f'{median / base:>11.2f}x')


if __name__ == '__main__':
    main()
