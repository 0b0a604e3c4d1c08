#!/usr/bin/env python3
"""torchrun's recovery from kill -9 of one of 4 workers, measured the way
tests/bench/elastic_recovery_bench measures trainrun's: a job of 64 MiB
gloo allreduces, one worker killed after step 3, recovery = the last step
completed before the kill to the first step completed after it (rank 0's
clock). torchrun restarts every worker and re-runs its rendezvous; the
workers resume from the step rank 0 saved (the stand-in for a checkpoint,
as cheap as trainrun's in-memory commit).

    /usr/bin/python3 tests/bench/torchrun_recovery.py [--kills 10] [--mb 64] [--monitor-interval 5]

--monitor-interval is torchrun's own (how often its agent looks at its
workers; default 5 s, as torchrun's). A benchmark, never a test.
"""
import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid


def worker(args):
    import torch
    import torch.distributed as dist
    dist.init_process_group("gloo")
    rank, size = dist.get_rank(), dist.get_world_size()
    step = int(open(args.state).read()) if os.path.exists(args.state) else 0
    n = args.mb * (1 << 20) // 4
    while step < args.steps:
        t = torch.full((n,), float(step + 1))
        dist.all_reduce(t)
        if t[0].item() != (step + 1) * size:
            sys.exit("wrong result")
        step += 1
        if rank == 0:
            with open(args.state + ".new", "w") as f:
                f.write(str(step))
            os.replace(args.state + ".new", args.state)
            print(f"step {step} size {size} t_ms {int(time.time() * 1000)}", flush=True)
    dist.destroy_process_group()


def worker_pid(tag, local_rank):
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            env = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
            cmd = open(f"/proc/{pid}/cmdline", "rb").read()
        except OSError:
            continue
        if tag.encode() in env and f"LOCAL_RANK={local_rank}".encode() in env and b"--worker" in cmd:
            return int(pid)
    return None


def one_kill(args, victim):
    tag = "TORCHRUN_BENCH_TAG=" + uuid.uuid4().hex
    with tempfile.TemporaryDirectory() as tmp:
        state = os.path.join(tmp, "step")
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes", "1",
               "--nproc_per_node", "4", "--max_restarts", "3", "--monitor_interval", str(args.monitor_interval),
               # Debian's torch 1.13 on Python 3.11 cannot parse --redirects 0 (IntFlag
               # iteration skips 0): stdout goes to files and is teed back with a prefix.
               "--redirects", "1", "--tee", "1", "--log_dir", os.path.join(tmp, "logs"),
               os.path.abspath(__file__), "--worker", "--steps", "8", "--mb", str(args.mb), "--state", state]
        env = dict(os.environ, OMP_NUM_THREADS="1")
        env[tag.split("=")[0]] = tag.split("=")[1]
        job = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        steps, killed = [], False
        for line in job.stdout:
            words = line.split(":", 1)[-1].split()
            if len(words) >= 6 and words[0] == "step":
                steps.append((int(words[1]), int(words[5])))
                if int(words[1]) == 3 and not killed:
                    pid = worker_pid(tag, victim)
                    if pid:
                        os.kill(pid, signal.SIGKILL)
                        killed = True
        job.wait()
        for (s0, t0), (s1, t1) in zip(steps, steps[1:]):
            if s0 == 3 and s1 <= 4 and killed:
                return t1 - t0, job.returncode
        return None, job.returncode


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--worker", action="store_true")
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--mb", type=int, default=64)
    p.add_argument("--state")
    p.add_argument("--kills", type=int, default=10)
    p.add_argument("--monitor-interval", type=float, default=5)
    args = p.parse_args()
    if args.worker:
        return worker(args)
    times = []
    for i in range(args.kills):
        ms, code = one_kill(args, i % 4)
        if ms is None:
            print(f"kill {i}: no recovery measured (torchrun exit {code})", file=sys.stderr)
        else:
            times.append(ms)
    times.sort()
    print(f"torchrun --max_restarts 3 --monitor_interval {args.monitor_interval}: recovery after kill -9 of 1 of 4 "
          f"workers ({args.mb} MiB allreduces), ms")
    print(f"{'ok/kills':>9} {'median':>8} {'p90':>8} {'min':>8} {'max':>8}")
    if times:
        p90 = times[min(len(times) - 1, int(0.9 * len(times)))]
        print(f"{len(times):>5}/{args.kills:<3} {statistics.median(times):>8.0f} {p90:>8} {times[0]:>8} {times[-1]:>8}")


if __name__ == "__main__":
    main()
