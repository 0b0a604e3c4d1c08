#!/usr/bin/env bash
# trainrun under a real Slurm (tests/slurm/cluster.sh starts one for this
# test and always stops it):
#   slurm_test.sh CASE TRAINRUN CONFORMANCE RANK_PROGRAM
# Cases:
#   srun-pmix NP        srun --mpi=pmix -n NP conformance: every rank passes on mpi
#   launcher-srun NP    salloc -n NP trainrun --launcher srun -np NP --backend tcp
#                       conformance: every rank passes on tcp; --dry-run shows srun
#   salloc              trainrun inside salloc: automatic srun mode, announced in
#                       one line; -np above the allocation is a usage error (2)
#   sbatch              an sbatch script runs trainrun ./conformance (automatic)
#   sbatch-exit-code    a rank exits 3 in an sbatch job: trainrun's summary, and
#                       ExitCode=3:0 in scontrol show job
#   scancel             scancel of a running sbatch job: trainrun's summary of
#                       the SIGTERM, nothing of the job is left
#   time-limit          an sbatch job past its --time: as scancel (1-2 minutes)
#   kill-9              kill -9 of trainrun inside salloc: nothing is left
#   timeout, ctrl-c     --timeout (exit 124) and SIGINT (exit 130) inside salloc:
#                       trainrun's summary, nothing is left
#   two-nodes-trainrun  two nodes h1, h2 (network namespaces, a slurmd each):
#                       salloc -N 2 trainrun runs ranks on both; conformance on tcp
#   two-nodes-per-node  examples/slurm/per_node.sbatch (srun --ntasks-per-node=1
#                       trainrun --nnodes 2 --rdzv-endpoint ...) on h1 and h2: one
#                       job, its output and summary once; a failing rank's code is sbatch's
#   two-nodes-pmix      srun --mpi=pmix -N 2 across them: conformance on mpi
#   no-pmi              plain srun -n 2 without PMI: one line per task, no Open MPI banner
#   confined            a node that confines every step to its cgroup (task/cgroup,
#                       ConstrainCores, ConstrainDevices) with 2 stand-in GPUs:
#                       examples/slurm/train.sbatch (the script docs/slurm-and-mpi.md
#                       shows) as 2 tasks with a GPU each: both ranks may use both
#                       CPUs and both GPUs, where a step asking for nothing gets one
# Exits 77 (skip) with the reason when Slurm is not installed or not root.
set -euo pipefail
case_name=$1 np=${5:-2}
# Absolute: the tests run in their own directory, and look for leftovers by path.
trainrun=$(realpath "$2") conformance=$(realpath "$3") rank_program=$(realpath "$4")
source "$(dirname "$0")/cluster.sh"
# This folder, and the batch scripts users copy (examples/slurm).
here=$(realpath "$(dirname "$0")") examples=$(realpath "$(dirname "$0")/../../examples/slurm")
train_sbatch=$examples/train.sbatch
[[ $case_name == two-nodes-* ]] && export SLURM_TEST_NODES=2 SLURM_TEST_CPUS=4
[[ $case_name == confined ]] && export SLURM_TEST_CGROUP=1 SLURM_TEST_GPUS=2
slurm_start
work=$SLURM_TEST_DIR/work
mkdir -p "$work"
cd "$work"

fail() { echo "FAIL: $*"; exit 1; }
# Every rank of NP printed "conformance: rank R of NP (BACKEND): passed".
expect_passed() {
  local out=$1 np=$2 backend=$3 rank
  for ((rank = 0; rank < np; ++rank)); do
    grep -q "conformance: rank $rank of $np ($backend): passed\$" <<<"$out" ||
      { echo "$out" | tail -40; fail "rank $rank of $np did not pass on $backend"; }
  done
}
# Waits (30 s at most) until every rank printed "rank R: ready" into job.out.
wait_ready() {
  for _ in $(seq 150); do
    [[ $(grep -c "rank .: ready" job.out 2>/dev/null) == "$np" ]] && return
    sleep 0.2
  done
  cat job.out
  fail "the ranks did not start"
}
# trainrun inside salloc in the background, its ranks sleeping; salloc_pid.
start_sleeping_job() {
  salloc --quiet -n "$np" "$trainrun" "$rank_program" init print:ready sleep:300000 > job.out 2>&1 &
  salloc_pid=$!
  wait_ready
}
# Waits until a job is over; echoes its final state.
wait_job_end() {
  local job=$1 state
  for _ in $(seq 900); do
    state=$(scontrol show job "$job" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2)
    case $state in PENDING|RUNNING|CONFIGURING|COMPLETING|SUSPENDED) sleep 0.2 ;; *) echo "$state"; return ;; esac
  done
  echo "still-$state"
}
# No process of ours that this test started is left anywhere.
expect_nothing_left() {
  local left
  for _ in $(seq 50); do
    left=$(pgrep -af "^($rank_program|$conformance|$trainrun)( |\$)|--job-name=trainrun-agent" || true)
    [[ -z $left ]] && return
    sleep 0.2
  done
  fail "left running: $left"
}
# Every command is bounded well inside meson's timeout, so that a hang fails
# the test, and runs in the background: bash runs the cleanup trap of a
# SIGTERM (meson's timeout) during `wait`, not after a foreground command.
run() {
  echo "+ $*"
  timeout -k 5 240 "$@" > "$work/run.out" 2>&1 &
  SLURM_TEST_RUNNING=$!
  status=0
  wait "$SLURM_TEST_RUNNING" || status=$?
  out=$(cat "$work/run.out")
}

case $case_name in
  srun-pmix)
    run srun --mpi=pmix --kill-on-bad-exit=1 -n "$np" "$conformance"
    expect_passed "$out" "$np" mpi
    [[ $status == 0 ]] || fail "exit status $status"
    ;;
  launcher-srun)
    run salloc --quiet -n "$np" "$trainrun" --launcher srun --dry-run "$conformance"
    [[ $status == 0 ]] || { echo "$out"; fail "--dry-run: exit status $status"; }
    # The step holds the node's CPUs of the job: one per task here.
    grep -q -- "srun --nodes=1 --ntasks=1 --nodelist=$(hostname -s) --cpus-per-task=$np --overlap .* agent\$" <<<"$out" ||
      { echo "$out"; fail "--dry-run does not show the srun command"; }
    run salloc --quiet -n "$np" "$trainrun" --launcher srun -np "$np" --backend tcp "$conformance"
    expect_passed "$out" "$np" tcp
    [[ $status == 0 ]] || { echo "$out" | tail -20; fail "exit status $status"; }
    grep -q "^\[0\] " <<<"$out" || fail "output is not tagged with ranks"
    ;;
  salloc)
    run salloc --quiet -n "$np" "$trainrun" "$conformance"
    expect_passed "$out" "$np" tcp
    [[ $status == 0 ]] || { echo "$out" | tail -20; fail "exit status $status"; }
    [[ $(grep -c "^trainrun: inside Slurm job [0-9]* ($(hostname -s):$np): starting one agent per node with srun" <<<"$out") == 1 ]] ||
      { echo "$out"; fail "no single line announcing srun mode"; }
    run salloc --quiet -n "$np" "$trainrun" -np $((np + 1)) "$conformance"
    [[ $status == 2 ]] || { echo "$out"; fail "-np above the allocation: exit status $status, not 2"; }
    grep -q "^trainrun: error: -np $((np + 1)) exceeds the $np task slot(s) of Slurm job" <<<"$out" ||
      { echo "$out"; fail "no clear error for -np above the allocation"; }
    run salloc --quiet -n "$np" "$trainrun" --launcher local -np 1 "$rank_program" env:SLURM_STEP_ID
    [[ $status == 0 ]] && grep -q "rank 0: SLURM_STEP_ID=<unset>" <<<"$out" ||
      { echo "$out"; fail "--launcher local did not run the rank here, outside any step"; }
    ;;
  sbatch)
    printf '#!/bin/bash\nexec %q %q\n' "$trainrun" "$conformance" > job.sh
    run sbatch --time=4 --wait -n "$np" -o job.out job.sh
    out=$(cat job.out)
    expect_passed "$out" "$np" tcp
    [[ $status == 0 ]] || { echo "$out" | tail -20; fail "sbatch --wait: exit status $status"; }
    grep -q "^trainrun: inside Slurm job" <<<"$out" || fail "no line announcing srun mode"
    ;;
  sbatch-exit-code)
    printf '#!/bin/bash\nexec %q %q init exit:1:3 sleep:200\n' "$trainrun" "$rank_program" > job.sh
    run sbatch --time=4 --parsable --wait -n "$np" -o job.out job.sh
    job=${out%%[;$'\n']*}
    [[ $status == 3 ]] || { cat job.out; fail "sbatch --wait: exit status $status, not 3"; }
    grep -q "rank 1.* exited with code 3" job.out || { cat job.out; fail "no summary naming rank 1 and code 3"; }
    scontrol show job "$job" | grep -q "ExitCode=3:0" || { scontrol show job "$job"; fail "ExitCode is not 3:0"; }
    grep -q "^JobId=$job .*JobState=FAILED.* ExitCode=3:0" "$SLURM_TEST_DIR/log/jobcomp.txt" ||
      { cat "$SLURM_TEST_DIR/log/jobcomp.txt"; fail "the job's completion record has no ExitCode=3:0"; }
    expect_nothing_left
    ;;
  scancel)
    printf '#!/bin/bash\nexec %q %q init print:ready sleep:300000\n' "$trainrun" "$rank_program" > job.sh
    job=$(sbatch --parsable -n "$np" -o job.out job.sh)
    wait_ready
    t0=$(date +%s.%N)
    scancel "$job"
    state=$(wait_job_end "$job")
    echo "job $job: $state after $(echo "$(date +%s.%N) - $t0" | bc 2>/dev/null || true) s"
    [[ $state == CANCELLED ]] || { cat job.out; fail "job state $state, not CANCELLED"; }
    expect_nothing_left
    cat job.out
    # Slurm signals every step at once: trainrun hears of it first, or from
    # the agent (a rank killed by SIGTERM); either way one clear summary.
    grep -Eq "^trainrun: (stopped by SIGTERM; all ranks were terminated|job failed: rank . \(host .*\) was killed by SIGTERM)" job.out ||
      fail "no summary of the SIGTERM from trainrun"
    ;;
  time-limit)
    # Slurm's own teardown at the time limit: SIGTERM to every step, SIGKILL
    # after KillWait. The limit is checked every 30 s, so this takes 1-2 min.
    printf '#!/bin/bash\nexec %q %q init print:ready sleep:300000\n' "$trainrun" "$rank_program" > job.sh
    job=$(sbatch --parsable --time=1 -n "$np" -o job.out job.sh)
    state=$(wait_job_end "$job")
    cat job.out
    [[ $state == TIMEOUT ]] || fail "job state $state, not TIMEOUT"
    [[ $(grep -c "rank .: ready" job.out) == "$np" ]] || fail "the ranks did not start"
    grep -Eq "^trainrun: (stopped by SIGTERM; all ranks were terminated|job failed: rank . \(host .*\) was killed by SIGTERM)" job.out ||
      fail "no summary of the SIGTERM from trainrun"
    expect_nothing_left
    ;;
  kill-9)
    start_sleeping_job
    kill -9 "$(pgrep -f "^$trainrun $rank_program" | head -1)"
    wait "$salloc_pid" || true
    expect_nothing_left
    ;;
  timeout)
    run salloc --quiet -n "$np" "$trainrun" --timeout 3 "$rank_program" init print:ready sleep:300000
    [[ $status == 124 ]] || { echo "$out"; fail "exit status $status, not 124"; }
    grep -q "^trainrun: the job ran longer than --timeout 3 s; all ranks were terminated" <<<"$out" ||
      { echo "$out"; fail "no --timeout summary"; }
    expect_nothing_left
    ;;
  ctrl-c)
    start_sleeping_job
    kill -INT "$(pgrep -f "^$trainrun $rank_program" | head -1)"
    status=0
    wait "$salloc_pid" || status=$?
    cat job.out
    [[ $status == 130 ]] || fail "exit status $status, not 130"
    grep -q "^trainrun: stopped by SIGINT; all ranks were terminated" job.out || fail "no summary of the SIGINT"
    expect_nothing_left
    ;;
  two-nodes-trainrun)
    # Node names do not resolve here (a cluster's would): --network names the job's network.
    run salloc --quiet -N 2 -n "$np" "$trainrun" --network "$slurm_net.0/24" "$rank_program" init topology
    echo "$out"
    [[ $status == 0 ]] || fail "exit status $status"
    grep -q "^trainrun: inside Slurm job [0-9]* (h1:[0-9],h2:[0-9])" <<<"$out" || fail "not on h1 and h2"
    grep -q "cross=1/2" <<<"$out" || fail "no rank on the second node"
    run salloc --quiet -N 2 -n "$np" "$trainrun" --network "$slurm_net.0/24" "$conformance"
    expect_passed "$out" "$np" tcp
    [[ $status == 0 ]] || { echo "$out" | tail -20; fail "exit status $status"; }
    ;;
  two-nodes-per-node)
    # One trainrun per node from the sbatch script users copy
    # (examples/slurm/per_node.sbatch: srun --ntasks-per-node=1 trainrun
    # --nnodes ... --rdzv-endpoint NODE0:29400), trainrun on PATH.
    script=$examples/per_node.sbatch
    export PATH=$(dirname "$trainrun"):$PATH NPROC_PER_NODE=2
    run sbatch --wait -o job.out "$script" "$rank_program" init topology
    out=$(cat job.out)
    echo "$out"
    [[ $status == 0 ]] || fail "sbatch --wait: exit status $status"
    [[ $(grep -c "backend=tcp size=4" <<<"$out") == 4 ]] || fail "not 4 ranks of one job"
    grep -q "rank 3: .* cross=1/2" <<<"$out" || fail "rank 3 is not on the second node"
    ! grep -q "no shared secret" <<<"$out" || fail "the script's secret was not used"
    run sbatch --wait -o job.out "$script" "$rank_program" init exit:3:3 sleep:200
    [[ $status == 3 ]] || { cat job.out; fail "a rank's exit 3: sbatch --wait says $status"; }
    grep -q "trainrun: job failed: rank 3 (host h2, pid [0-9]*) exited with code 3" job.out ||
      { cat job.out; fail "no summary naming rank 3 on h2"; }
    expect_nothing_left
    ;;
  two-nodes-pmix)
    run srun --mpi=pmix --kill-on-bad-exit=1 -N 2 -n "$np" "$conformance"
    expect_passed "$out" "$np" mpi
    [[ $status == 0 ]] || fail "exit status $status"
    ;;
  no-pmi)
    run srun -n 2 "$conformance"
    echo "$out"
    [[ $status != 0 ]] || fail "plain srun without PMI succeeded"
    [[ $(grep -c "use 'srun --mpi=pmix' or 'trainrun --launcher srun'" <<<"$out") == 2 ]] ||
      fail "not one line per task saying what to do"
    lines=$(grep -vc "^srun: error: " <<<"$out" || true)
    [[ $lines == 2 ]] || fail "$lines lines from the tasks, not 2"
    ! grep -qi "ompi\|pmi support\|MPI_Init" <<<"$out" || fail "Open MPI printed something"
    ;;
  confined)
    # The job's program says what each rank may use.
    ln -s "$here/what_a_rank_may_use.sh" train
    export STAND_IN_GPUS=$SLURM_TEST_DIR/dev
    # What confinement does to the agent's step when it asks for nothing,
    # in a job with a GPU per task and for a user who exported
    # SRUN_CPUS_PER_TASK as srun(1) advises: one CPU and one GPU for the
    # node's two tasks. Without that squeeze there is nothing to show.
    run env SRUN_CPUS_PER_TASK=1 salloc --quiet -n 2 --gpus-per-task=1 srun --nodes=1 --ntasks=1 --overlap ./train
    echo "a step asking for nothing: $out"
    [[ $status == 0 ]] || fail "the plain step: exit status $status"
    [[ $out == "a task: CPUs 1 of the job's 2, GPUs 1 (CUDA_VISIBLE_DEVICES=0), may open: nvidia0;"* ]] ||
      slurm_skip "Slurm's cgroups do not confine a step here (it got: $out)"
    # The agent's step asks for the node's CPUs and GPUs, on the line
    # --dry-run shows.
    run salloc --quiet -n 2 --gpus-per-task=1 "$trainrun" --dry-run ./train
    grep -q -- "env -u SLURM_GPUS_PER_TASK .*srun --nodes=1 --ntasks=1 --nodelist=$(hostname -s) --cpus-per-task=2 --gres=gpu:2 --overlap .* agent\$" <<<"$out" ||
      { echo "$out"; fail "--dry-run does not show the step's request"; }
    # The documented script, as 2 tasks of 1 CPU and 1 GPU on this node.
    mkdir -p bin && ln -sf "$trainrun" bin/trainrun
    run env PATH="$work/bin:$PATH" SRUN_CPUS_PER_TASK=1 sbatch --wait --nodes=1 --ntasks-per-node=2 \
      --cpus-per-task=1 --gpus-per-task=1 --time=4 -o job.out "$train_sbatch"
    cat job.out
    [[ $status == 0 ]] || fail "sbatch --wait: exit status $status"
    # Every rank has both CPUs and both GPUs, and sees the job's CPUs per
    # task, not its agent's step's; srun said nothing.
    for rank in 0 1; do
      grep -q "^\[$rank\] rank $rank: CPUs 2 of the job's 2, GPUs 2 (CUDA_VISIBLE_DEVICES=0,1), may open: nvidia0 nvidia1; SLURM_CPUS_PER_TASK=1\$" job.out ||
        fail "rank $rank does not have both CPUs and both GPUs of the node"
    done
    ! grep -q "^srun: " job.out || fail "srun warned"
    expect_nothing_left
    ;;
  *) echo "unknown case $case_name"; exit 2 ;;
esac
echo "PASS: $case_name"
