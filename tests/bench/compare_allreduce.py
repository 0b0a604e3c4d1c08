#!/usr/bin/env python3
"""Side-by-side allreduce benchmark: trainrun's allreduce_bench against plain
library baselines, same sizes, same timing loop, in the same run. Programs
alternate for --rounds rounds and each size's median over rounds is kept, so
a burst of load on the 2-core machine hurts both sides alike.

  compare_allreduce.py --build build [--np 2] [--rounds 3] [--max-bytes 256M]
  compare_allreduce.py --baseline mpi --launch mpirun [--mpi-args "--mca btl tcp,self"]

--baseline gloo: plain Gloo (tests/bench/gloo_allreduce_bench), both sides
started by trainrun --local, trainrun on its tcp backend.
--baseline mpi: plain MPI_Allreduce (tests/bench/mpi_allreduce_bench) under
plain mpirun, trainrun on its mpi backend. --launch says how trainrun's side
starts: mpirun (the default with --baseline mpi: the very same mpirun command
line as the baseline, so both run under the same MPI settings) or trainrun
(trainrun --local for tcp, trainrun --launcher mpirun for mpi). --mpi-args
are added to every mpirun command line.
--baseline build: the allreduce_bench of another trainrun build
(--baseline-build DIR), both on tcp (the other one as --backend gloo, the
name every version knows), for A/B runs of two versions;
--collective broadcast|alltoall times that op instead of allreduce (both
builds' allreduce_bench must know --collective), --no-shm puts both sides
on the TCP mesh:
  compare_allreduce.py --baseline build --baseline-build ../old/build --collective alltoall --no-shm --np 4
--backend tcp with --baseline mpi --launch trainrun: trainrun's own transports
(trainrun --local on tcp: shared memory on one host) against plain MPI.
--also-tcp adds trainrun --local --no-shm on tcp (its TCP mesh) as a third
program, with its own columns and ratios:
  compare_allreduce.py --baseline mpi --launch trainrun --backend tcp --also-tcp
--sizes-per-run N runs each program on N sizes at a time, alternating per
chunk of sizes instead of per whole sweep: on a loaded machine the two sides
of a size are then measured seconds apart, not minutes (costs one launch per
chunk).

Prints one table: mean time, median (p50) time and busbw per program and the
ratios trainrun/baseline (busbw: higher is better; time: lower is better).
"""
import argparse
import csv
import io
import os
import shlex
import statistics
import subprocess
import sys
import tempfile


def run_csv(cmd, env=None):
    run = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    if run.returncode != 0:
        sys.exit(f"{shlex.join(cmd)}: exit status {run.returncode}\n{run.stderr[-3000:]}")
    out = run.stdout
    lines = [l for l in out.splitlines() if l and (l[0].isdigit() or l.startswith("bytes,"))]
    return {int(r["bytes"]): r for r in csv.DictReader(io.StringIO("\n".join(lines)))}


def parse_size(text):
    """The harness's size syntax: a number with an optional K/M/G and B."""
    t = text.upper().rstrip("B")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(t[-1:], 1)
    return int(float(t[:-1] if scale > 1 else t) * scale)


def size_chunks(min_bytes, max_bytes, per_run):
    sizes = []
    size = min_bytes
    while size <= max_bytes:
        sizes.append(size)
        size *= 2
    per_run = per_run or len(sizes)
    return [sizes[i:i + per_run] for i in range(0, len(sizes), per_run)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-bytes", default="4")
    ap.add_argument("--max-bytes", default="256M")
    ap.add_argument("--baseline", choices=["gloo", "mpi", "build"], default="gloo")
    ap.add_argument("--baseline-build", help="with --baseline build: the other build folder")
    ap.add_argument("--launch", choices=["mpirun", "trainrun"],
                    help="how trainrun's side starts (default: mpirun with --baseline mpi, else trainrun)")
    ap.add_argument("--mpi-args", default="", help="extra arguments for every mpirun, e.g. '--mca btl tcp,self'")
    ap.add_argument("--sizes-per-run", type=int, default=0, help="sizes per program run (default: all)")
    ap.add_argument("--backend", choices=["tcp", "mpi"], help="trainrun's backend (default: the baseline's)")
    ap.add_argument("--collective", choices=["allreduce", "broadcast", "alltoall"], default="allreduce",
                    help="the op allreduce_bench times (with --baseline build)")
    ap.add_argument("--no-shm", action="store_true", help="with --baseline build: both sides over TCP")
    ap.add_argument("--also-tcp", action="store_true",
                    help="add trainrun --local --no-shm on tcp (the TCP mesh) as a third program")
    args = ap.parse_args()
    if args.baseline == "build" and not args.baseline_build:
        ap.error("--baseline build needs --baseline-build DIR")
    if (args.collective != "allreduce" or args.no_shm) and args.baseline != "build":
        ap.error("--collective and --no-shm go with --baseline build")
    bench_args = (["--no-shm"] if args.no_shm else [])
    op_args = ["--collective", args.collective] if args.collective != "allreduce" else []
    launch = args.launch or ("mpirun" if args.baseline == "mpi" else "trainrun")
    backend = args.backend or ("mpi" if args.baseline == "mpi" else "tcp")

    trainrun = os.path.join(args.build, "trainrun")
    mpirun = ["mpirun", "-np", str(args.np)] + shlex.split(args.mpi_args)
    if os.geteuid() == 0:
        mpirun.append("--allow-run-as-root")
    if args.np > (os.cpu_count() or 1):
        mpirun.append("--oversubscribe")
    bench = os.path.join(args.build, "examples", "allreduce_bench")
    if launch == "mpirun":
        trainrun_side = mpirun + ["-x", "TRAINRUN_BACKEND=" + backend, bench]
    elif backend == "mpi":
        trainrun_side = [trainrun, "--launcher", "mpirun", "--no-tag-output", "-np", str(args.np),
                         "--backend", "mpi", "--mpi-args", args.mpi_args, bench]
    else:
        trainrun_side = [trainrun, "--local", "--no-tag-output", "-np", str(args.np), "--backend", backend] + \
            bench_args + [bench] + op_args
    programs = {"trainrun": lambda: trainrun_side}
    if args.also_tcp:
        programs["tcp"] = lambda: [trainrun, "--local", "--no-tag-output", "-np", str(args.np), "--backend", "tcp",
                                   "--no-shm", bench]
    if args.baseline == "gloo":
        programs["gloo"] = lambda: [trainrun, "--local", "--no-tag-output", "-np", str(args.np),
                                    os.path.join(args.build, "tests", "bench", "gloo_allreduce_bench"),
                                    "--store", "{store}"]
    elif args.baseline == "build":
        other = [os.path.join(args.baseline_build, "trainrun"), "--local", "--no-tag-output", "-np", str(args.np),
                 "--backend", "gloo"] + bench_args + \
            [os.path.join(args.baseline_build, "examples", "allreduce_bench")] + op_args
        programs["build"] = lambda: other
    else:
        programs["mpi"] = lambda: mpirun + [os.path.join(args.build, "tests", "bench", "mpi_allreduce_bench")]
    print("# " + " | ".join(shlex.join(make()) for make in programs.values()), flush=True)

    chunks = size_chunks(parse_size(args.min_bytes), parse_size(args.max_bytes), args.sizes_per_run)
    results = {name: [] for name in programs}
    for rnd in range(args.rounds):
        print(f"# round {rnd + 1}/{args.rounds}", file=sys.stderr, flush=True)
        for name in programs:
            results[name].append({})
        for chunk in chunks:
            sweep = ["--min-bytes", str(chunk[0]), "--max-bytes", str(chunk[-1]), "--csv"]
            for name, make in programs.items():
                with tempfile.TemporaryDirectory(prefix="trainrun-bench-") as store:
                    results[name][-1].update(run_csv([a.replace("{store}", store) for a in make() + sweep]))

    def median(name, size, field):
        return statistics.median(float(r[size][field]) for r in results[name] if size in r)

    base = args.baseline
    sizes = sorted(results["trainrun"][0])
    if not sizes or any(not r[0] for r in results.values()):
        sys.exit("compare_allreduce: a program printed no CSV rows (run one by hand to see why)")
    print(f"# {args.collective} float32, np={args.np}, trainrun on {backend} ({launch}"
          f"{', --no-shm' if args.no_shm else ''}), "
          f"median of {args.rounds} alternating rounds, {args.sizes_per_run or 'all'} size(s) per run")
    print(f"# {'bytes':>10} {base + ' us':>10} {'trainrun us':>11} {'ratio':>6} {base + ' p50':>9} "
          f"{'trainrun p50':>12} {'ratio':>6} {base + ' GB/s':>9} {'trainrun GB/s':>13} {'busbw ratio':>11}")
    for size in sizes:
        bt, tt = median(base, size, "time_us"), median("trainrun", size, "time_us")
        bp, tp = median(base, size, "p50_us"), median("trainrun", size, "p50_us")
        bb, tb = median(base, size, "busbw_gbs"), median("trainrun", size, "busbw_gbs")
        ratio_bw = tb / bb if bb > 0 else float("nan")
        print(f"  {size:>10} {bt:>10.2f} {tt:>11.2f} {tt / bt:>6.3f} {bp:>9.2f} {tp:>12.2f} {tp / bp:>6.3f} "
              f"{bb:>9.3f} {tb:>13.3f} {ratio_bw:>11.3f}")
    if args.also_tcp:
        print(f"# side by side: p50 time and busbw of {base}, trainrun (tcp, shared memory) and tcp "
              "(--no-shm); ratios to " + base)
        print(f"# {'bytes':>10} {base + ' p50':>9} {'shm p50':>9} {'tcp p50':>9} {'shm/' + base:>8} "
              f"{'tcp/' + base:>8} {base + ' GB/s':>9} {'shm GB/s':>9} {'tcp GB/s':>9} {'shm bw x':>8} {'tcp bw x':>8}")
        for size in sizes:
            p = {n: median(n, size, "p50_us") for n in (base, "trainrun", "tcp")}
            b = {n: median(n, size, "busbw_gbs") for n in (base, "trainrun", "tcp")}
            bw = lambda n: b[n] / b[base] if b[base] > 0 else float("nan")
            print(f"  {size:>10} {p[base]:>9.2f} {p['trainrun']:>9.2f} {p['tcp']:>9.2f} "
                  f"{p['trainrun'] / p[base]:>8.3f} {p['tcp'] / p[base]:>8.3f} {b[base]:>9.3f} "
                  f"{b['trainrun']:>9.3f} {b['tcp']:>9.3f} {bw('trainrun'):>8.3f} {bw('tcp'):>8.3f}")


if __name__ == "__main__":
    main()
