// RelayedAgentLink: the launcher's handle on a host whose agent another
// host's agent started and relays for (a tree of agents). It owns nothing:
// its frames travel inside ToChild and FromChild frames of the relay's link,
// which the supervisor wraps and unwraps, and the relay says when the
// connection ends (ChildGone).
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "cli/agent/agent_link.h"

namespace trainrun::cli {

class RelayedAgentLink final : public AgentLink {
 public:
  RelayedAgentLink(std::string host, const AgentLink& through, std::uint32_t child)
      : host_(std::move(host)), route_{&through, child} {}

  const std::string& host() const override { return host_; }
  int read_fd() const override { return -1; }
  int write_fd() const override { return -1; }
  void close_write() override {}  // the supervisor sends the relay an empty ToChild
  std::optional<std::string> failure() override { return std::nullopt; }  // ChildGone says why
  void finish(std::chrono::milliseconds) override {}
  std::optional<Route> relayed() const override { return route_; }

 private:
  std::string host_;
  Route route_;
};

}  // namespace trainrun::cli
