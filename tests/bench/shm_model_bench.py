#!/usr/bin/env python3
"""The shared-memory collectives against what this machine's memory allows.

Measures memcpy and float32 `a += b` on one and two threads
(tests/bench/memory_rates), then allreduce_bench on one host at each --np
(ranks bound to cores: unbound, the scheduler sometimes keeps two ranks on
one CPU for a whole run, which halves or doubles every figure), alternating
with the allreduce_bench of --baseline-build when given (an A/B of two
versions) for --rounds rounds (medians), and the memory rates once more at
the end. Prints one table: busbw of each side, the zero-copy model
and each side's fraction of it, so the figures mean the same on any machine:

  shm_model_bench.py --build build [--baseline-build ../old/build [--baseline-device allocated]]
                     [--np 2 4] [--rounds 3] [--in-place] [--rewrite]
                     [--min-bytes 64K] [--max-bytes 256M]

The zero-copy model: an allreduce of S bytes among n ranks must at least
reduce (n-1) S bytes (`a += b`) and copy (n-1) S bytes (every rank gets the
other ranks' parts of the result), spread over min(n, CPUs) threads at the
per-thread rates measured with that many threads (two at most);
busbw = S / t * 2 (n-1) / n, as allreduce_bench counts it. For n = 2 that
is 2 / (1/add + 1/memcpy), the two-thread rates.
"""
import argparse
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_allreduce import run_csv  # noqa: E402


def memory_rates(build):
    out = subprocess.run([os.path.join(build, "tests", "bench", "memory_rates")], capture_output=True, text=True,
                         check=True, timeout=600).stdout
    rates = {}
    for line in out.splitlines()[1:]:
        kernel, threads, gbs = line.split(",")
        rates[(kernel, int(threads))] = float(gbs)
    return rates


def model_busbw(rates, n):
    threads = min(n, os.cpu_count() or 1)
    per = min(threads, 2)
    seconds_per_byte = (n - 1) * (1 / rates[("add", per)] + 1 / rates[("memcpy", per)]) / threads
    return 1 / seconds_per_byte * 2 * (n - 1) / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--baseline-build", help="another build folder to alternate with (an A/B of two versions)")
    ap.add_argument("--np", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--baseline-device", default="host", choices=["host", "allocated"],
                    help="where the baseline's buffers live (allocated: an A/B of the in-place path itself)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rewrite", action="store_true",
                    help="each rank writes its send buffer before every allreduce, untimed, as backward writes "
                         "DDP's buckets (allreduce_bench --rewrite)")
    ap.add_argument("--in-place", action="store_true", help="allreduce with send == recv on every side, as DDP does")
    ap.add_argument("--min-bytes", default="64K")
    ap.add_argument("--max-bytes", default="256M")
    args = ap.parse_args()
    before = memory_rates(args.build)
    # Each side: a build and where its buffers live (allreduce_bench --device):
    # ordinary memory (the copy path) or Communicator::allocate_memory's,
    # which shared memory reduces in place.
    sides = {"this": (args.build, "host"), "allocated": (args.build, "allocated")}
    if args.baseline_build:
        sides["baseline"] = (args.baseline_build, args.baseline_device)
    busbw = {}
    for n in args.np:
        for rnd in range(args.rounds):
            print(f"# np={n} round {rnd + 1}/{args.rounds}", file=sys.stderr, flush=True)
            for side, (build, device) in sides.items():
                # --backend gloo: the tcp backend's name in every version.
                command = [os.path.join(build, "trainrun"), "--local", "--no-tag-output", "--bind-to", "core", "-np", str(n),
                           "--backend", "gloo", os.path.join(build, "examples", "allreduce_bench"),
                           "--min-bytes", args.min_bytes, "--max-bytes", args.max_bytes, "--csv"]
                if device != "host":
                    command += ["--device", device]
                if args.in_place:
                    command += ["--in-place"]
                if args.rewrite:
                    command += ["--rewrite"]
                for size, row in run_csv(command).items():
                    busbw.setdefault((n, size, side), []).append(float(row["busbw_gbs"]))
    after = memory_rates(args.build)
    rates = {key: (before[key] + after[key]) / 2 for key in before}
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    print("memory, GB/s per thread (mean of before and after): " +
          ", ".join(f"{k} x{t} {rates[(k, t)]:.2f}" for k, t in sorted(rates)) + f"; load average {load}")
    print("busbw GB/s, medians of the rounds; model: the zero-copy model from those rates; "
          "allocated: buffers from Communicator::allocate_memory")
    names = (["baseline"] if args.baseline_build else []) + ["this", "allocated"]
    columns = ["np", "bytes"] + names + ["model"] + [f"{n}/model" for n in names] + \
        (["this/baseline", "allocated/baseline"] if args.baseline_build else ["allocated/this"])
    print(" ".join(f"{c:>14}" for c in columns))
    for n in args.np:
        model = model_busbw(rates, n)
        for size in sorted({s for (m, s, _) in busbw if m == n}):
            value = {name: statistics.median(busbw[(n, size, name)]) for name in names}
            row = [n, size] + [f"{value[name]:.2f}" for name in names] + [f"{model:.2f}"]
            row += [f"{value[name] / model:.2f}" for name in names]
            if args.baseline_build:
                row += [f"{value['this'] / value['baseline']:.2f}", f"{value['allocated'] / value['baseline']:.2f}"]
            else:
                row += [f"{value['allocated'] / value['this']:.2f}"]
            print(" ".join(f"{c:>14}" for c in row))

if __name__ == "__main__":
    main()
