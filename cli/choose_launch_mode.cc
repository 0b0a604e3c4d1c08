#include "cli/choose_launch_mode.h"

#include "cli/mode/local_ssh_launch_mode.h"
#include "cli/mpirun/mpirun_launch_mode.h"
#include "cli/node/per_node_launch_mode.h"
#include "cli/srun/srun_launch_mode.h"

namespace trainrun::cli {

LaunchModeChoice choose_launch_mode(const Options& options, const GetEnv& getenv) {
  // One trainrun per node: asked for by torchrun's options or a
  // scheduler's environment, whatever else would choose (Slurm's).
  if (LaunchModeChoice choice = node::choose_per_node(options, getenv); choice.mode || !choice.error.empty()) {
    return choice;
  }
  // An elastic job grows on local and SSH agents; its own checks refuse
  // --launcher mpirun and srun (cli/elastic/elastic_start.h).
  if (options.elastic()) return {std::make_unique<LocalSshLaunchMode>(), ""};
  // The first mode the command line and the environment ask for, in turn.
  for (const auto& choose : {choose_mpirun, choose_srun}) {
    LaunchModeChoice choice = choose(options, getenv);
    if (choice.mode || !choice.error.empty()) return choice;
  }
  return {std::make_unique<LocalSshLaunchMode>(), ""};  // this machine, and SSH to the others
}

}  // namespace trainrun::cli
