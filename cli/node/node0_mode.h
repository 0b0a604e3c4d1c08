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
  Node0Mode(NodeServer& server, SharedSecret secret) : server_(server), secret_(std::move(secret)) {}

  std::string name(const PlannedJob&) const override { return "per-node"; }
  AgentReach reach(const PlannedJob&, std::size_t host) const override {
    return host == 0 ? AgentReach::kChild : AgentReach::kOther;
  }
  std::vector<std::string> agent_choices(const PlannedJob& planned) const override;
  std::optional<std::string> dry_run_line() const override { return std::nullopt; }
  std::optional<std::string> announcement() const override { return std::nullopt; }
  AgentStart start(const Options& options, const PlannedJob& planned, ReportRecorder& report) const override;
  rendezvous::Secret job_secret(const std::string& job_id) const override;

 private:
  NodeServer& server_;
  SharedSecret secret_;
  mutable int runs_ = 0;  // start() is called once per run of the job (--max-restarts)
};

// The nodes as the plan's hosts, in node order: each named by its host
// name (with "#RANK" after it where two nodes share one), where it joined
// from, its ranks as slots.
std::vector<HostSlots> node_hosts(const std::vector<NodeInfo>& nodes);

}  // namespace trainrun::cli::node
