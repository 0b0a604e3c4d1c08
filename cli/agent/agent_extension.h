// AgentExtension: work a host agent takes on beside its own ranks, plugged
// in by the program that runs it (cli/main.cc gives `trainrun agent` the
// relay of a tree of agents, cli/tree/agent_relay.h, which this layer may
// not name). The agent hands it the frames it does not know, polls its
// descriptors with its own, and exits only once it is done. Called from the
// agent's thread only.
#pragma once

#include <poll.h>

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "cli/agent/agent_protocol.h"

namespace trainrun::cli {

class AgentExtension {
 public:
  // Queues a frame to the launcher (dropped once the launcher is gone).
  using Send = std::function<void(FrameType type, std::uint32_t rank, std::string_view payload)>;
  virtual ~AgentExtension() = default;
  // Whether it takes this frame from the launcher.
  virtual bool handle(const Frame& frame, const Send& up) = 0;
  // Appends what it waits for. `reading` is false while the agent's own
  // frames to the launcher are backed up: read nothing new then.
  virtual void add_fds(std::vector<pollfd>& fds, bool reading) = 0;
  // One of the descriptors it added is ready.
  virtual void on_ready(const pollfd& ready, const Send& up) = 0;
  // The launcher is gone: end what it started.
  virtual void launcher_gone() = 0;
  // Whether everything it started has ended.
  virtual bool done() const = 0;
};

}  // namespace trainrun::cli
