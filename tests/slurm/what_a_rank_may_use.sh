#!/bin/bash
# The program of the slurm test `confined`: one line saying what this
# process may use, as its cgroups allow:
#   rank 0: CPUs 2 of the job's 2, GPUs 2 (CUDA_VISIBLE_DEVICES=0,1), may open: nvidia0 nvidia1; SLURM_CPUS_PER_TASK=1
# ("a task" instead of "rank N" outside trainrun). The stand-in GPUs are the
# devices under $STAND_IN_GPUS: one that the device cgroup denies fails to
# open with EPERM, one it allows with ENXIO (no driver serves them).
IFS=, read -ra ranges <<<"$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)"
cpus=0
for r in "${ranges[@]}"; do ((cpus += ${r#*-} - ${r%-*} + 1)); done
gpus=0
[[ -n ${CUDA_VISIBLE_DEVICES:-} ]] && gpus=$(($(tr -cd , <<<"$CUDA_VISIBLE_DEVICES" | wc -c) + 1))
opens=""
for dev in "$STAND_IN_GPUS"/nvidia*; do
  [[ $( (exec 3<"$dev") 2>&1) == *"not permitted"* ]] || opens+=" ${dev##*/}"
done
who=${TRAINRUN_RANK:+rank $TRAINRUN_RANK}
echo "${who:-a task}: CPUs $cpus of the job's $SLURM_JOB_CPUS_PER_NODE, GPUs $gpus" \
  "(CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-}), may open:${opens:- none};" \
  "SLURM_CPUS_PER_TASK=${SLURM_CPUS_PER_TASK-unset}"
