// Node0Mode: how node 0 of a per-node launch (cli/node) runs the job once
// the nodes have joined: as an agent mode (cli/mode/agent_mode.h), so that
// cli/launch.cc plans, supervises, restarts and reports it as any other
// job. Its hosts are the nodes (Options::joined_hosts); node 0's own ranks
// run on a local agent, every other node's on the agent that node starts
// for each run and connects back (NodeServer::agents, NodeAgentLink). With
// a shared secret the ranks' secret is derived from it on every node and
// never sent. Used from the launcher's main thread.
#pragma once

#include <vector>

#include "cli/mode/agent_mode.h"
#include "cli/node/node_server.h"

namespace trainrun::cli::node {

class Node0Mode final : public AgentMode {
 public:
  // `elastic`: --nnodes MIN:MAX, the nodes are the elastic job's hosts.
  Node0Mode(NodeServer& server, SharedSecret secret, bool elastic)
      : server_(server), secret_(std::move(secret)), elastic_(elastic) {}

  std::string name(const PlannedJob&) const override { return "per-node"; }
  AgentReach reach(const PlannedJob&, std::size_t host) const override {
    return host == 0 ? AgentReach::kChild : AgentReach::kOther;
  }
  std::vector<std::string> agent_choices(const PlannedJob& planned) const override;
  std::optional<std::string> dry_run_line() const override { return std::nullopt; }
  std::optional<std::string> announcement() const override { return std::nullopt; }
  AgentStart start(const Options& options, const PlannedJob& planned, ReportRecorder& report) const override;
  rendezvous::Secret job_secret(const std::string& job_id) const override;
  HostSource* host_source() const override { return elastic_ ? &server_ : nullptr; }

 private:
  NodeServer& server_;
  SharedSecret secret_;
  bool elastic_;
  mutable int runs_ = 0;  // start() is called once per run of the job (--max-restarts)
};

}  // namespace trainrun::cli::node
