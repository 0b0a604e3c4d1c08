#!/usr/bin/env python3
"""Launch-to-exit time of a no-op job: trainrun (init + barrier + exit, local
ranks) beside mpirun running an MPI no-op (MPI_Init + barrier + finalize), the
two alternating in the same run. Prints medians and the ratio.

  launch_bench.py --build build [--np 4] [--runs 20]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time


def timed(cmd, env):
    start = time.perf_counter()
    result = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"launch_bench: {' '.join(cmd)} failed ({result.returncode}): {result.stderr.decode()[-500:]}")
    return elapsed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--np", type=int, default=4)
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    bench = os.path.join(args.build, "tests", "bench")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    commands = {
        "trainrun": [os.path.join(args.build, "trainrun"), "--local", "-np", str(args.np),
                     os.path.join(bench, "noop")],
    }
    mpirun = shutil.which("mpirun")
    if mpirun and os.path.exists(os.path.join(bench, "mpi_noop")):
        commands["mpirun"] = [mpirun, "-np", str(args.np), "--oversubscribe", "--bind-to", "none",
                              os.path.join(bench, "mpi_noop")]
    times = {name: [] for name in commands}
    for name, cmd in commands.items():  # warm the page cache
        timed(cmd, env)
    for _ in range(args.runs):
        for name, cmd in commands.items():
            times[name].append(timed(cmd, env))
    print(f"# launch-to-exit of a no-op job, np={args.np}, {args.runs} alternating runs (ms)")
    print(f"# {'launcher':<10} {'median':>8} {'min':>8} {'p90':>8}")
    for name, samples in times.items():
        samples.sort()
        p90 = samples[int(0.9 * (len(samples) - 1))]
        print(f"  {name:<10} {statistics.median(samples) * 1e3:>8.1f} {samples[0] * 1e3:>8.1f} {p90 * 1e3:>8.1f}")
    if "mpirun" in times:
        ratio = statistics.median(times["trainrun"]) / statistics.median(times["mpirun"])
        print(f"# trainrun / mpirun median: {ratio:.3f}")


if __name__ == "__main__":
    main()
