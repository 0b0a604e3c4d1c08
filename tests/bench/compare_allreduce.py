#!/usr/bin/env python3
"""Side-by-side allreduce benchmark: trainrun's allreduce_bench against plain
library baselines, same sizes, same timing loop, in the same run. Programs
alternate for --rounds rounds and each size's median over rounds is kept, so
a burst of load on the 2-core machine hurts both sides alike.

  compare_allreduce.py --build build [--np 2] [--rounds 3] [--max-bytes 256M]
  compare_allreduce.py --build build --baseline build --baseline-build OTHER

The baseline is plain Gloo, or (--baseline build) the allreduce_bench of
another trainrun build, for A/B runs of two versions.
Prints one table: time and busbw per program and the ratios
trainrun/baseline (busbw: higher is better; time: lower is better).
"""
import argparse
import csv
import io
import os
import statistics
import subprocess
import sys
import tempfile


def run_csv(cmd, env=None):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env, timeout=1800).stdout
    lines = [l for l in out.splitlines() if l and (l[0].isdigit() or l.startswith("bytes,"))]
    return {int(r["bytes"]): r for r in csv.DictReader(io.StringIO("\n".join(lines)))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-bytes", default="4")
    ap.add_argument("--max-bytes", default="256M")
    ap.add_argument("--baseline", choices=["gloo", "build"], default="gloo")
    ap.add_argument("--baseline-build", help="with --baseline build: the other build folder")
    args = ap.parse_args()

    trainrun = os.path.join(args.build, "trainrun")
    sweep = ["--min-bytes", args.min_bytes, "--max-bytes", args.max_bytes, "--csv"]

    def bench(build):
        return lambda: [os.path.join(build, "trainrun"), "--local", "-np", str(args.np), "--backend", "gloo",
                        os.path.join(build, "examples", "allreduce_bench")] + sweep

    programs = {"trainrun": bench(args.build)}
    if args.baseline == "build":
        if not args.baseline_build:
            ap.error("--baseline build needs --baseline-build DIR")
        programs["build"] = bench(args.baseline_build)
    if args.baseline == "gloo":
        programs["gloo"] = lambda: [trainrun, "--local", "-np", str(args.np),
                                    os.path.join(args.build, "tests", "bench", "gloo_allreduce_bench"),
                                    "--store", "{store}"] + sweep

    results = {name: [] for name in programs}
    for rnd in range(args.rounds):
        for name, make in programs.items():
            print(f"# round {rnd + 1}/{args.rounds}: {name}", file=sys.stderr, flush=True)
            with tempfile.TemporaryDirectory(prefix="trainrun-bench-") as store:
                results[name].append(run_csv([a.replace("{store}", store) for a in make()]))

    def median(name, size, field):
        return statistics.median(float(r[size][field]) for r in results[name] if size in r)

    base = args.baseline
    sizes = sorted(results["trainrun"][0])
    print(f"# allreduce float32 sum, np={args.np}, median of {args.rounds} alternating rounds")
    print(f"# {'bytes':>10} {base + ' us':>12} {'trainrun us':>12} {'time ratio':>10} "
          f"{base + ' GB/s':>11} {'trainrun GB/s':>13} {'busbw ratio':>11}")
    for size in sizes:
        bt, tt = median(base, size, "time_us"), median("trainrun", size, "time_us")
        bb, tb = median(base, size, "busbw_gbs"), median("trainrun", size, "busbw_gbs")
        ratio_bw = tb / bb if bb > 0 else float("nan")
        print(f"  {size:>10} {bt:>12.2f} {tt:>12.2f} {tt / bt:>10.3f} {bb:>11.3f} {tb:>13.3f} {ratio_bw:>11.2f}")


if __name__ == "__main__":
    main()
