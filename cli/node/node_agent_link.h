// NodeAgentLink: node 0's link to another node's agent in a per-node
// launch (cli/node): the agent connection that node's trainrun opened for
// this run of the job, which it relays to its own `trainrun agent`. The
// supervisor reads and writes the socket itself, as it does a local
// agent's pipes. Owned by the supervisor; used from its thread only.
#pragma once

#include <string>

#include "cli/agent/agent_link.h"
#include "os/unique_fd.h"

namespace trainrun::cli::node {

class NodeAgentLink final : public AgentLink {
 public:
  // `host`: the node's name in the plan; `node`: "node 2 (h3, 10.0.0.3)"
  // for messages. `derives_secret`: the job has a shared secret.
  NodeAgentLink(std::string host, std::string node, UniqueFd socket, bool derives_secret)
      : host_(std::move(host)), node_(std::move(node)), socket_(std::move(socket)), derives_secret_(derives_secret) {}

  const std::string& host() const override { return host_; }
  int read_fd() const override { return socket_.get(); }
  int write_fd() const override { return closed_ ? -1 : socket_.get(); }
  void close_write() override;
  std::optional<std::string> failure() override;
  void finish(std::chrono::milliseconds) override {}  // the node's trainrun waits for its agent
  bool derives_secret() const override { return derives_secret_; }

 private:
  std::string host_, node_;
  UniqueFd socket_;
  bool derives_secret_;
  bool closed_ = false;
};

}  // namespace trainrun::cli::node
