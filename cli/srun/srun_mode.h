// Whether a job starts its agents through Slurm's srun, and how. Inside an
// allocation (SLURM_JOB_ID set) and without -H, --hostfile or --local, or
// with --launcher srun, the hosts and slots are the allocation's and every
// host's agent is one srun step: `srun --nodes=1 --ntasks=1 --nodelist=HOST
// --cpus-per-task=N [--gres=gpu:G] ... trainrun agent`, which holds the
// node's CPUs and GPUs of the job (cli/srun/step_request.h), and whose stdin
// and stdout are the agent's control stream (cli/srun/srun_agent_link.h; the
// launch mode: cli/srun/srun_launch_mode.h).
// Rendezvous, supervision and teardown are every agent mode's
// (cli/launch.cc). Pure given the environment and srun's path.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/plan/options.h"
#include "cli/srun/slurm_allocation.h"
#include "cli/srun/step_request.h"

namespace trainrun::cli {

struct SrunMode {
  SlurmAllocation allocation;
  std::string srun;                   // srun's path
  std::string trainrun;               // what each step runs as `trainrun agent`
  bool automatic = false;             // chosen because we run inside an allocation
  std::vector<StepRequest> steps;     // what each node's step asks for, parallel to allocation.nodes
  std::vector<std::string> rank_env;  // NAME=VALUE every rank gets (StepRequests::rank_env)

  // The step that runs the agent of `host` (one of allocation.nodes).
  std::vector<std::string> agent_command(const std::string& host) const;
  // What the user sees: one line when the mode was chosen automatically.
  std::string announcement() const;
};

struct SrunDecision {
  std::optional<SrunMode> mode;  // nullopt: the local/SSH launcher as before
  std::string error;             // a usage error (exit 2); nothing starts
};

// `srun_path` is srun found in PATH (nullopt: not installed);
// `trainrun_path` the agent binary (--remote-trainrun, else this one).
SrunDecision decide_srun_mode(const Options& options, const SlurmGetEnv& getenv,
                              const std::optional<std::string>& srun_path, const std::string& trainrun_path);

}  // namespace trainrun::cli
