#!/usr/bin/env python3
"""MNIST training throughput with trainrun's LibTorch integration, np=1, 2
and 4, in alternating rounds; and where a step's time goes, from the
engine's timeline (--timeline) and the optimizer's own wait clock.

  mnist_bench.py --build build [--rounds 2] [--epochs 2]

Per np, medians over rounds of the last epoch:
  images/s      all ranks together
  step ms       wall time per optimizer step (one batch of 32 per rank)
  comm ms       time per step some gradient's allreduce was in flight (from
                its NEGOTIATE begin to its ALLREDUCE end in the timeline,
                union over tensors): communication, overlapped or not
  wire ms       time per step a backend allreduce ran (TCP_ALLREDUCE spans)
  wait ms       time per step the training thread blocked in step() waiting
                for allreduces (DistributedOptimizer's clock): the part of
                communication that backward did not hide
  compute ms    step ms - wait ms
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile


def union_length(intervals):
    total, end = 0.0, None
    for b, e in sorted(intervals):
        if end is None or b > end:
            total += e - b
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


def timeline_split(path, first_step_ts):
    """(comm us, wire us) summed over allreduce spans that begin after first_step_ts."""
    events = json.load(open(path))
    events = events["traceEvents"] if isinstance(events, dict) else events
    open_spans, comm, wire = {}, [], []
    for e in events:
        if e.get("ph") not in ("B", "E"):
            continue
        key = (e["pid"], e["name"])
        if e["ph"] == "B":
            open_spans.setdefault(key, []).append(e["ts"])
        elif open_spans.get(key):
            begin = open_spans[key].pop()
            if begin < first_step_ts:
                continue
            if e["name"] == "TCP_ALLREDUCE":
                wire.append((begin, e["ts"]))
            elif e["name"] in ("NEGOTIATE_ALLREDUCE", "ALLREDUCE"):
                comm.append((begin, e["ts"]))
    return union_length(comm), union_length(wire)


def run(build, np, epochs, data):
    with tempfile.TemporaryDirectory(prefix="mnist-bench-") as tmp:
        timeline = os.path.join(tmp, "timeline.json")
        cmd = [os.path.join(build, "trainrun"), "--local", "-np", str(np), "--timeline", timeline,
               os.path.join(build, "examples", "mnist", "mnist_train"), "--epochs", str(epochs),
               "--no-progress", "--data", data, "--checkpoint", os.path.join(tmp, "ckpt.pt")]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=900).stdout
        lines = re.findall(r"epoch (\d+)/\d+: loss [0-9.]+, held-out accuracy ([0-9.]+)%.*?, ([0-9.]+) s, "
                           r"([0-9.]+) images/s, waiting for allreduce ([0-9.]+)%", out)
        if len(lines) != epochs:
            sys.exit(f"mnist_bench: unexpected output:\n{out}")
        _, accuracy, seconds, images, waiting = lines[-1]
        steps = 8000 // np // 32
        # The last epoch starts `seconds` before the run's last allreduce:
        # take the timeline's spans from there.
        events = json.load(open(timeline))
        events = events["traceEvents"] if isinstance(events, dict) else events
        last = max(e["ts"] for e in events if e.get("ph") == "E")
        comm, wire = timeline_split(timeline, last - float(seconds) * 1e6)
        step_ms = float(seconds) * 1e3 / steps
        wait_ms = step_ms * float(waiting) / 100
        return {"images/s": float(images), "step ms": step_ms, "comm ms": comm / 1e3 / steps,
                "wire ms": wire / 1e3 / steps, "wait ms": wait_ms, "compute ms": step_ms - wait_ms,
                "accuracy %": float(accuracy)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--data", default="data/mnist/mnist.bin")
    args = ap.parse_args()
    nps = [1, 2, 4]
    results = {np: [] for np in nps}
    for rnd in range(args.rounds):
        for np in nps:
            print(f"# round {rnd + 1}/{args.rounds}: np={np}", file=sys.stderr, flush=True)
            results[np].append(run(args.build, np, args.epochs, args.data))
    fields = ["images/s", "step ms", "compute ms", "wait ms", "comm ms", "wire ms", "accuracy %"]
    print(f"# MNIST CNN, batch 32 per rank, epoch {args.epochs} of {args.epochs}, median of {args.rounds} rounds")
    print("  np " + "".join(f"{f:>12}" for f in fields) + f"{'speed-up':>10}")
    base = statistics.median(r["images/s"] for r in results[1])
    for np in nps:
        med = {f: statistics.median(r[f] for r in results[np]) for f in fields}
        print(f"  {np:>2} " + "".join(f"{med[f]:>12.2f}" for f in fields) + f"{med['images/s'] / base:>10.2f}")


if __name__ == "__main__":
    main()
