// SrunAgentLink: a host agent started as a Slurm job step, `srun ...
// trainrun agent` (cli/srun/srun_mode.h), run by trainrun as a child on
// pipes. srun carries the agent's stdin and stdout to the launcher, so the
// supervisor drives it like a local agent; its stderr is ours. EOF on srun's
// stdin (trainrun finished, or was killed) reaches the agent, which ends its
// ranks and exits, and the step ends with it. Owned and used by the
// supervisor's thread only.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "cli/agent_link.h"

namespace trainrun::cli {

class SrunAgentLink final : public AgentLink {
 public:
  // Starts `command` (srun's argv, srun's path first); throws Error(Io) if
  // it cannot.
  SrunAgentLink(std::string host, const std::vector<std::string>& command);
  ~SrunAgentLink() override;

  const std::string& host() const override { return host_; }
  int read_fd() const override { return from_srun_; }
  int write_fd() const override { return to_srun_; }
  void close_write() override;
  std::optional<std::string> failure() override;
  void finish(std::chrono::milliseconds timeout) override;

 private:
  bool reap(int options);

  std::string host_;
  pid_t srun_ = -1;
  int to_srun_ = -1, from_srun_ = -1;
  int status_ = 0;
  bool reaped_ = false;
};

}  // namespace trainrun::cli
