// AgentLink: the launcher's connection to one host agent. The supervisor
// sees only file descriptors, so a local agent (a child process on pipes)
// and a remote one (an SSH exec channel, bridged to a socketpair) are driven
// by the same loop. Owned by the supervisor; used from its thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace trainrun::cli {

class AgentLink {
 public:
  virtual ~AgentLink() = default;
  // The host as named in messages ("h2", "user@h2", "localhost").
  virtual const std::string& host() const = 0;
  // Frames from the agent arrive here (non-blocking).
  virtual int read_fd() const = 0;
  // Frames to the agent go here (non-blocking); -1 once closed.
  virtual int write_fd() const = 0;
  // EOF to the agent: it ends everything it started and exits.
  virtual void close_write() = 0;
  // Why the connection is gone when read_fd hit EOF early ("lost connection
  // to h2: ..."), or nullopt while it is healthy.
  virtual std::optional<std::string> failure() = 0;
  // Waits (bounded) for the agent's end and releases its resources.
  virtual void finish(std::chrono::milliseconds timeout) = 0;
  // Whether the host works out its ranks' TRAINRUN_SECRET itself (a
  // per-node launch with a shared secret, cli/node): the job frames sent to
  // it leave the secret out, so it never crosses the network.
  virtual bool derives_secret() const { return false; }

  // A host reached through another host's agent (a tree of agents,
  // cli/tree): that agent's link and this host's place among its children.
  // Its frames travel inside ToChild and FromChild frames of that link, and
  // its read_fd and write_fd are -1.
  struct Route {
    const AgentLink* through = nullptr;
    std::uint32_t child = 0;
  };
  virtual std::optional<Route> relayed() const { return std::nullopt; }
};

}  // namespace trainrun::cli
