// LocalAgentLink: an agent on this machine, `trainrun agent` started by
// fork/exec of our own binary with its stdin and stdout on pipes
// (cli/agent/piped_agent_link.h). Its stderr is ours, so its own diagnostics reach
// the user directly.
#pragma once

#include <string>
#include <utility>

#include "cli/agent/piped_agent_link.h"
#include "cli/process/self_executable.h"

namespace trainrun::cli {

class LocalAgentLink final : public PipedAgentLink {
 public:
  // Starts the agent; throws Error(Io) if it cannot.
  explicit LocalAgentLink(std::string host)
      : PipedAgentLink(std::move(host), {self_executable(), "agent"}, {"the agent", "", SIGKILL}) {}
};

}  // namespace trainrun::cli
