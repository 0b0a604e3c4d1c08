// AgentRelay: what a host agent does in a tree of agents besides running
// its own ranks (cli/agent/agent_extension.h). On a Relay frame it starts
// the agents of the hosts below it (start_agent_tree, on a thread of its
// own, while the agent goes on answering Pings) and answers RelayReady;
// then it passes ToChild frames down to its direct children and their
// frames up as FromChild, and says ChildGone when a child's connection ends
// (why, when it was lost). When the launcher is gone it closes every child,
// whose agents end their jobs, and is done once they all have (bounded).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "cli/agent/agent_extension.h"
#include "cli/ssh/preflight.h"
#include "os/unique_fd.h"

namespace trainrun::cli {

class AgentRelay final : public AgentExtension {
 public:
  AgentRelay();
  ~AgentRelay() override;

  bool handle(const Frame& frame, const Send& up) override;
  void add_fds(std::vector<pollfd>& fds, bool reading) override;
  void on_ready(const pollfd& ready, const Send& up) override;
  void launcher_gone() override;
  bool done() const override;

 private:
  struct Child;
  void start(const Frame& frame, const Send& up);
  void started(const Send& up);  // the start thread is over
  void read_child(std::uint32_t index, const Send& up);
  void write_child(Child& child);

  std::thread starter_;
  UniqueFd wake_read_, wake_write_;  // the start thread says it is over
  std::shared_ptr<RemoteAgents> starting_;
  std::vector<Child> children_;
  bool gone_ = false;  // the launcher
  std::chrono::steady_clock::time_point gone_at_;
};

}  // namespace trainrun::cli
