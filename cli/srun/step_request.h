// What each node's agent step asks Slurm for: everything the job holds on
// that node, so that where Slurm confines a step to its cgroup
// (TaskPlugin=task/cgroup with ConstrainCores and ConstrainDevices) the
// agent's ranks may use every CPU and GPU the allocation gave them. Pure:
// the environment comes in through a lookup function; errors name the
// variable and quote its value.
//
// Why the step must say it (Slurm 22.05, seen on the confined node of
// tests/slurm/cluster.sh): srun reads options from the variables that
// salloc and sbatch export, and those describe the allocation's tasks, not
// one agent task that runs all of a node's ranks. In a job with
// --gpus-per-task=1 or --ntasks-per-gpu=1, `srun --ntasks=1` got one GPU for
// both ranks of the node; with SRUN_CPUS_PER_TASK=1 (what srun(1) tells
// users to export) or SLURM_EXACT=1, one CPU; with --gpus=4 over two nodes,
// no step at all ("Invalid generic resource (gres) specification").
//
//   CPUs  --cpus-per-task=N: the node's CPUs of the job
//         (SLURM_JOB_CPUS_PER_NODE), else its task slots x
//         SLURM_CPUS_PER_TASK (default 1). Never less than the node's ranks
//         need (-np never exceeds the slots), never more than the step may
//         have. In 22.05 -c implies --exact, so the step holds exactly
//         these; --overlap (srun_mode.cc) keeps it from waiting for, or
//         holding back, any other step. SRUN_CPUS_PER_TASK is removed from
//         srun's environment: -c replaces it, and with both srun warns that
//         the step "may never run".
//   GPUs  --gres=gpu[:TYPE]:N, N the node's GPUs of the job, from the
//         first variable set of: SLURM_GPUS_PER_NODE; SLURM_GPUS_PER_TASK x
//         the node's slots; SLURM_NTASKS_PER_GPU (the slots over it,
//         rounded up); SLURM_GPUS (the job's total: all of it on one node,
//         an even share on each of several, an error when it does not
//         divide); the gpu entries of SLURM_GRES; SLURM_GPUS_ON_NODE or
//         the count of SLURM_JOB_GPUS (a --gres=gpu:N job: N on every
//         node). No GPU variable, no GPU request: Slurm refuses a step that
//         asks for GRES its job lacks. SLURM_GRES's other entries are kept.
//         The GPU variables srun would also read as options (per job,
//         node, socket, task; tasks per GPU) are removed from srun's
//         environment, since this --gres replaces them: --ntasks-per-gpu
//         from the environment makes Slurm refuse the step, --gpus makes it
//         ask one node for the whole job's GPUs.
//   Ranks see the job's values of what the step changes: srun gives its
//   task SLURM_CPUS_PER_TASK=N (the node's CPUs) and the removed variables
//   would be missing, so every rank gets the launcher's values instead
//   (and SLURM_CPUS_PER_TASK=1, Slurm's default, when the job set none).
#pragma once

#include <string>
#include <vector>

#include "cli/srun/slurm_allocation.h"

namespace trainrun::cli {

struct StepRequest {
  std::vector<std::string> options;  // srun's: --cpus-per-task=N [--gres=...]
  std::vector<std::string> unset;    // variables removed from srun's environment
};

struct StepRequests {
  std::vector<StepRequest> nodes;     // parallel to allocation.nodes
  std::vector<std::string> rank_env;  // NAME=VALUE: the job's values, for every rank
  std::string error;                  // set: nodes is empty, nothing may start
};

StepRequests step_requests(const SlurmAllocation& allocation, const SlurmGetEnv& getenv);

}  // namespace trainrun::cli
