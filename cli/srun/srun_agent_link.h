// SrunAgentLink: a host agent started as a Slurm job step, `srun ...
// trainrun agent` (cli/srun/srun_mode.h), run by trainrun as a child on
// pipes. srun carries the agent's stdin and stdout to the launcher, so the
// supervisor drives it like a local agent; its stderr is ours. EOF on srun's
// stdin (trainrun finished, or was killed) reaches the agent, which ends its
// ranks and exits, and the step ends with it. Owned and used by the
// supervisor's thread only.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "cli/agent/piped_agent_link.h"

namespace trainrun::cli {

class SrunAgentLink final : public PipedAgentLink {
 public:
  // Starts `command` (srun's argv, srun's path first); throws Error(Io) if
  // it cannot. At finish()'s deadline srun gets SIGTERM, which asks Slurm to
  // end the step (SIGKILL would leave it).
  SrunAgentLink(std::string host, const std::vector<std::string>& command)
      : PipedAgentLink(std::move(host), command, {"srun of the agent", " (see srun's message above)", SIGTERM}) {}
};

}  // namespace trainrun::cli
