// LocalAgentLink: an agent on this machine, `trainrun agent` started by
// fork/exec of our own binary with its stdin and stdout on pipes. Its stderr
// is ours, so its own diagnostics reach the user directly.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "cli/agent_link.h"

namespace trainrun::cli {

class LocalAgentLink final : public AgentLink {
 public:
  // Starts the agent; throws Error(Io) if it cannot.
  explicit LocalAgentLink(std::string host);
  ~LocalAgentLink() override;

  const std::string& host() const override { return host_; }
  int read_fd() const override { return from_agent_; }
  int write_fd() const override { return to_agent_; }
  void close_write() override;
  std::optional<std::string> failure() override;
  void finish(std::chrono::milliseconds timeout) override;

 private:
  std::string host_;
  pid_t pid_ = -1;
  int to_agent_ = -1, from_agent_ = -1;
  int status_ = 0;
  bool reaped_ = false;
};

// The path of the running trainrun binary (what agents are started from).
std::string self_executable();

}  // namespace trainrun::cli
