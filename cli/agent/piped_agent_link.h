// PipedAgentLink: a host agent behind a child process that trainrun runs
// itself, with the child's stdin and stdout on pipes and its stderr ours:
// `trainrun agent` on this machine (LocalAgentLink) or `srun ... trainrun
// agent` (SrunAgentLink). The child leads its own process group, so a
// Ctrl-C at the terminal reaches trainrun alone, which ends the job through
// the agents. Owned and used by the supervisor's thread only.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <string>
#include <vector>

#include "cli/agent/agent_link.h"
#include "os/unique_fd.h"

namespace trainrun::cli {

class PipedAgentLink : public AgentLink {
 public:
  struct Style {
    std::string what;           // "the agent", "srun of the agent": for failure()
    std::string exit_hint;      // appended to "exited with code N"
    int stop_signal = SIGKILL;  // what finish() sends at its deadline
  };
  // Starts `argv` (its path first); throws Error(Io) if it cannot.
  PipedAgentLink(std::string host, const std::vector<std::string>& argv, Style style);
  ~PipedAgentLink() override;

  const std::string& host() const override { return host_; }
  int read_fd() const override { return from_child_.get(); }
  int write_fd() const override { return to_child_.get(); }
  void close_write() override;
  std::optional<std::string> failure() override;
  void finish(std::chrono::milliseconds timeout) override;

 private:
  bool reap(int options);

  std::string host_;
  Style style_;
  pid_t pid_ = -1;
  UniqueFd to_child_, from_child_;
  int status_ = 0;
  bool reaped_ = false;
};

}  // namespace trainrun::cli
