#!/usr/bin/env bash
# Draws every picture in docs/pictures from real trainrun jobs, so that the
# pictures show what the code does today:
#   process-model.svg        a 4-rank job on two "hosts" (--report, --verbose,
#                            and each rank's parent: its host agent)
#   timeline.svg             three training steps of examples/mnist's --timeline
#   two-level-allreduce.svg  the allreduce across two "hosts", from that job's
#                            rank layout and its --verbose routing line
#   job-report.svg           the --report of a job whose rank 2 is killed
# The two "hosts" are this machine under two names (-H localhost:2,127.0.0.1:2):
# trainrun treats them as two hosts, each with its own agent, shared memory
# within each and TCP between them, and needs neither root nor SSH for it.
#
# Usage: bash scripts/make_pictures.sh [BUILD_DIR]   (default: build; after
# scripts/setup.sh and scripts/build.sh). Needs Debian's python3-matplotlib
# for /usr/bin/python3 (scripts/setup.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath "${1:-build}")
python=/usr/bin/python3
out=$PWD/docs/pictures
draw=$PWD/scripts/draw_pictures.py
fail() { echo "make_pictures: $*" >&2; exit 1; }
$python -c 'import matplotlib' 2>/dev/null || fail "matplotlib is missing for $python (Debian: python3-matplotlib)"
for f in trainrun examples/hello examples/allreduce_bench examples/mnist/mnist_train; do
  [[ -x $build/$f ]] || fail "$build/$f is missing: run scripts/build.sh first"
done
[[ -f data/mnist/mnist.bin ]] || fail "data/mnist/mnist.bin is missing: run scripts/setup.sh and scripts/build.sh first"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
# The jobs run in the scratch folder (the MNIST example writes its checkpoint
# there); the pictures name the programs as a reader of the docs runs them.
cp -r data "$work/data"
ln -s "$build" "$work/build"
cd "$work"
two_hosts=(-H localhost:2,127.0.0.1:2)

echo "make_pictures: process-model.svg"
# Each rank prints its pid, its parent (the host agent) and the agent's parent
# (the launcher), then becomes the hello example.
cat >ranks.sh <<'EOF'
#!/bin/sh
agent=$PPID
echo "pids: rank=$$ agent=$agent launcher=$(ps -o ppid= -p "$agent" | tr -d ' ')"
exec ./build/examples/hello
EOF
chmod +x ranks.sh
./build/trainrun "${two_hosts[@]}" --verbose --report model.json ./ranks.sh >model.out 2>model.err
$python "$draw" process-model --report model.json --verbose model.err --ranks model.out "$out/process-model.svg"

echo "make_pictures: timeline.svg"
timeline_cmd=(./build/trainrun --local -np 2 --timeline timeline.json ./build/examples/mnist/mnist_train --epochs 1)
"${timeline_cmd[@]}" >timeline.out 2>&1 || { cat timeline.out; fail "the timeline job failed"; }
$python "$draw" timeline --timeline timeline.json --command "${timeline_cmd[*]}" "$out/timeline.svg"

echo "make_pictures: two-level-allreduce.svg"
bench_cmd=(./build/trainrun "${two_hosts[@]}" --verbose --report bench.json --rank-filter 0
           ./build/examples/allreduce_bench --min-bytes 4K --max-bytes 1M --factor 16)
"${bench_cmd[@]}" >bench.out 2>bench.err || { cat bench.out bench.err; fail "the allreduce job failed"; }
shown=$(printf '%s ' "${bench_cmd[@]}" | sed 's/--verbose --report bench.json //')
$python "$draw" two-level --report bench.json --verbose bench.err --command "${shown% }" "$out/two-level-allreduce.svg"

echo "make_pictures: job-report.svg"
# Rank 2 is killed with SIGKILL two seconds into training, as the kernel's
# out-of-memory killer would; trainrun stops the others and says why.
cat >doomed.sh <<'EOF'
#!/bin/sh
if [ "$TRAINRUN_RANK" = 2 ]; then (sleep 2; kill -9 $$) & fi
exec ./build/examples/mnist/mnist_train --epochs 1
EOF
chmod +x doomed.sh
status=0
./build/trainrun "${two_hosts[@]}" --report failed.json ./doomed.sh >failed.out 2>&1 || status=$?
[[ $status -eq 137 ]] || { cat failed.out; fail "the failing job exited $status, not 137 (128 + SIGKILL)"; }
$python "$draw" report --report failed.json "$out/job-report.svg"

ls -l "$out"
