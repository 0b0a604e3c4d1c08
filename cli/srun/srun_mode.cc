#include "cli/srun/srun_mode.h"

namespace trainrun::cli {

// `env -u NAME ... srun`: the agent link gives srun our environment, and
// this way the step's line shows what srun does not see. Shebang lines
// rely on this path on every system that runs shell scripts.
constexpr const char* kEnvProgram = "/usr/bin/env";

std::vector<std::string> SrunMode::agent_command(const std::string& host) const {
  const StepRequest* request = nullptr;
  for (std::size_t i = 0; i < allocation.nodes.size() && i < steps.size(); ++i) {
    if (allocation.nodes[i].host == host) request = &steps[i];
  }
  std::vector<std::string> command;
  if (request && !request->unset.empty()) {
    command.push_back(kEnvProgram);
    for (const std::string& name : request->unset) command.insert(command.end(), {"-u", name});
  }
  command.insert(command.end(), {srun, "--nodes=1", "--ntasks=1", "--nodelist=" + host});
  if (request) command.insert(command.end(), request->options.begin(), request->options.end());
  // --overlap: the agents' steps (and the user's own) never wait for each
  // other's CPUs. --unbuffered: the step's stdout is a raw pseudo-terminal
  // instead of a line-buffered pipe, so frames pass at once and unchanged.
  // --mpi=none: the agent is no MPI task; its ranks get trainrun's world.
  command.insert(command.end(), {"--overlap", "--unbuffered", "--mpi=none", "--kill-on-bad-exit=0",
                                 "--job-name=trainrun-agent", "--quiet", trainrun, "agent"});
  return command;
}

std::string SrunMode::announcement() const {
  return "trainrun: inside " + allocation.description() +
         ": starting one agent per node with srun (--launcher local runs every rank here instead)";
}

SrunDecision decide_srun_mode(const Options& o, const SlurmGetEnv& getenv, const std::optional<std::string>& srun_path,
                              const std::string& trainrun_path) {
  SrunDecision decision;
  const bool asked = o.launcher == "srun";
  const bool hosts_given = !o.hosts.empty() || !o.hostfile.empty() || o.local;
  if (!asked && (!o.launcher.empty() || hosts_given)) return decision;  // local, SSH or mpirun
  const auto fail = [&](std::string why) {
    decision.error = std::move(why);
    return decision;
  };
  if (asked && hosts_given) {
    return fail(
        "--launcher srun takes its hosts from the Slurm allocation; it cannot be combined with "
        "-H, --hostfile or --local");
  }
  SlurmAllocationResult found = slurm_allocation_from_env(getenv);
  if (!found.allocation && found.error.empty()) {
    if (!asked) return decision;  // not inside an allocation: this machine, as always
    return fail(
        "--launcher srun needs a Slurm allocation, and SLURM_JOB_ID is not set: run trainrun inside "
        "salloc or an sbatch script (e.g. salloc -n 4 trainrun ./train)");
  }
  const std::string local_hint = asked ? "" : " (--launcher local runs every rank on this machine instead)";
  if (!found.allocation) return fail(found.error + local_hint);
  const SlurmAllocation& allocation = *found.allocation;
  if (o.np > allocation.slots()) {
    return fail("-np " + std::to_string(o.np) + " exceeds the " + std::to_string(allocation.slots()) +
                " task slot(s) of " + allocation.description() + ": ask salloc/sbatch for more tasks (-n " +
                std::to_string(o.np) + ")" + local_hint);
  }
  if (o.backend == "mpi") {
    return fail(
        "--backend mpi needs ranks that MPI starts itself: under Slurm run 'srun --mpi=pmix ./train' "
        "or 'trainrun --launcher mpirun'; trainrun's srun agents give tcp (or nccl)");
  }
  if (!srun_path) return fail("srun not found in PATH, inside " + allocation.description() + local_hint);
  StepRequests steps = step_requests(allocation, getenv);
  if (!steps.error.empty()) return fail(steps.error + local_hint);
  decision.mode =
      SrunMode{allocation, *srun_path, trainrun_path, !asked, std::move(steps.nodes), std::move(steps.rank_env)};
  return decision;
}

}  // namespace trainrun::cli
