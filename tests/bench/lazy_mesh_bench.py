#!/usr/bin/env python3
"""Start-up at scale, before and after links made at first use
(backends/tcp/peer_links.h): `trainrun --local --no-shm -np N
lazy_mesh_program allreduce sockets` (init, one allreduce checked on every
rank, exit) at each N, the two builds alternating run by run, and the
sockets each rank holds after the allreduce (/proc/PID/fd, counted by
tests/integration/lazy_mesh_program.cc). Prints medians of the runs that
succeeded, how many did, and the ratio after/before.

  lazy_mesh_bench.py --before DIR --after DIR [--np 128,256,512,1024] [--runs 5] [--lookup-np 512]

With --lookup-np N it then times tests/bench/address_lookup_bench.cc of the
--after build at N ranks, its two modes alternating: one multi-key GET of
every address at start against one GET per recursive-doubling partner.

DIR is a build directory (DIR/trainrun, DIR/tests/lazy_mesh_program) or
holds both files. The jobs get the hard limits of open files and of
processes as their soft limits (a rank of the eager mesh holds 2(N-1)+1
sockets; 1024 ranks and their threads are several thousand tasks), and
--start-timeout 300 (--start-timeout S): the launcher's 30 s is shorter
than 1024 processes take to start on 2 busy CPUs, for either build.
"""
import argparse
import os
import re
import resource
import statistics
import subprocess
import time


def programs(directory):
    for launcher, program in (("trainrun", "tests/lazy_mesh_program"), ("trainrun", "lazy_mesh_program")):
        a, b = os.path.join(directory, launcher), os.path.join(directory, program)
        if os.path.exists(a) and os.path.exists(b):
            return a, b
    raise SystemExit(f"lazy_mesh_bench: no trainrun and lazy_mesh_program in {directory}")


def raise_limits():
    for limit in (resource.RLIMIT_NOFILE, resource.RLIMIT_NPROC):
        soft, hard = resource.getrlimit(limit)
        resource.setrlimit(limit, (hard, hard))


def run_job(launcher, program, np, timeout, start_timeout):
    cmd = [launcher, "--local", "--no-shm", "--start-timeout", str(start_timeout), "-np", str(np), program,
           "allreduce", "sockets"]
    start = time.perf_counter()
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                           preexec_fn=raise_limits)
    except subprocess.TimeoutExpired:
        return {"ok": False, "why": f"no exit within {timeout} s"}
    elapsed = time.perf_counter() - start
    out, err = r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")
    m = re.search(r"sockets per rank: min (\d+) max (\d+)", out)
    if r.returncode != 0 or not m or f"size {np}: ok" not in out:
        lines = [line for line in err.splitlines() if line.strip()] or ["(nothing on stderr)"]
        return {"ok": False, "why": f"exit {r.returncode}: {lines[0][:160]}"}
    return {"ok": True, "seconds": elapsed, "sockets": (int(m[1]), int(m[2]))}


def lookup_table(directory, np, runs, timeout):
    launcher = os.path.join(directory, "trainrun")
    program = os.path.join(directory, "tests", "bench", "address_lookup_bench")
    times = {"all": [], "lazy": []}
    for _ in range(runs):
        for mode in times:
            start = time.perf_counter()
            r = subprocess.run([launcher, "--local", "-np", str(np), program, mode], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, timeout=timeout, preexec_fn=raise_limits)
            if r.returncode == 0:
                times[mode].append(time.perf_counter() - start)
    print(f"# address lookup at {np} ranks (address_lookup_bench), {runs} runs each, alternating")
    for mode, what in (("all", "one multi-key GET at start"), ("lazy", "one GET per partner at first use")):
        ok = times[mode]
        median = f"{statistics.median(ok):.2f} s" if ok else "-"
        print(f"  {mode:<5} {what:<34} median {median} ({len(ok)}/{runs})")
    if times["all"] and times["lazy"]:
        print(f"# lazy / all: {statistics.median(times['lazy']) / statistics.median(times['all']):.3f}")


def summary(results):
    good = [r for r in results if r["ok"]]
    median = statistics.median(r["seconds"] for r in good) if good else None
    sockets = good[-1]["sockets"] if good else None
    return median, sockets, len(good)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--np", default="128,256,512,1024")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--lookup-np", type=int, default=0)
    # The launcher's default (30 s) is shorter than starting 1024 processes on 2 busy CPUs.
    ap.add_argument("--start-timeout", type=int, default=300)
    args = ap.parse_args()
    builds = {"before": programs(args.before), "after": programs(args.after)}
    sizes = [int(n) for n in args.np.split(",")]
    print(f"# {os.cpu_count()} CPUs, load average at start {os.getloadavg()[0]:.2f}; "
          f"nofile {resource.getrlimit(resource.RLIMIT_NOFILE)[1]}, nproc {resource.getrlimit(resource.RLIMIT_NPROC)[1]}")
    print(f"# trainrun --local --no-shm --start-timeout {args.start_timeout} -np N lazy_mesh_program allreduce sockets; "
          f"{args.runs} runs each, alternating")
    rows, failures = [], []
    for np in sizes:
        results = {"before": [], "after": []}
        for _ in range(args.runs):
            for name, (launcher, program) in builds.items():
                r = run_job(launcher, program, np, args.timeout, args.start_timeout)
                results[name].append(r)
                if not r["ok"]:
                    failures.append(f"np {np} {name}: {r['why']}")
        rows.append((np, summary(results["before"]), summary(results["after"])))

    def seconds(s):
        return f"{s[0]:.2f} s ({s[2]}/{args.runs})" if s[0] is not None else f"- (0/{args.runs})"

    def sockets(s):
        return f"{s[1][0]}-{s[1][1]}" if s[1] else "-"

    print(f"{'np':>5} | {'before: median (ok)':>20} | {'after: median (ok)':>20} | {'after/before':>12} | "
          f"{'sockets/rank before':>19} | {'after':>7}")
    for np, before, after in rows:
        ratio = f"{after[0] / before[0]:.3f}" if before[0] and after[0] else "-"
        print(f"{np:>5} | {seconds(before):>20} | {seconds(after):>20} | {ratio:>12} | {sockets(before):>19} | "
              f"{sockets(after):>7}")
    print(f"# load average at end {os.getloadavg()[0]:.2f}")
    for line in failures:
        print(f"# failed: {line}")
    if args.lookup_np:
        lookup_table(args.after, args.lookup_np, args.runs, args.timeout)


if __name__ == "__main__":
    main()
