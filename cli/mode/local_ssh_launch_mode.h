// LocalSshLaunchMode: the default launch mode (`--launcher local`, and
// every elastic job): this machine's agent is trainrun's own child on
// pipes (cli/agent/local_agent_link.h); every other host's is started over
// SSH, after a parallel pre-flight of all of them that starts nothing
// unless every host passes (cli/ssh/preflight.h).
#pragma once

#include "cli/mode/agent_mode.h"

namespace trainrun::cli {

class LocalSshLaunchMode final : public AgentMode {
 public:
  std::string name(const PlannedJob& planned) const override;
  AgentReach reach(const PlannedJob& planned, std::size_t host) const override;
  std::vector<std::string> agent_choices(const PlannedJob& planned) const override;
  std::optional<std::string> dry_run_line() const override { return std::nullopt; }
  std::optional<std::string> announcement() const override { return std::nullopt; }
  AgentStart start(const Options& options, const PlannedJob& planned, ReportRecorder& report) const override;
};

}  // namespace trainrun::cli
