#include "cli/node/node0_mode.h"

#include <iostream>

#include "cli/agent/local_agent_link.h"
#include "cli/job/job_state.h"
#include "cli/job/report_recorder.h"
#include "cli/node/node_agent_link.h"
#include "cli/plan/host_list.h"

namespace trainrun::cli::node {
namespace {

// How long node 0 waits for each node's agent at the start of a run.
constexpr std::chrono::seconds kAgentsTimeout{30};

// One run's agents: node 0's own, and each node's connection.
class NodeAgents final : public JobAgents {
 public:
  NodeAgents(NodeServer& server, const JobPlan& plan, std::vector<UniqueFd> sockets, bool derives_secret)
      : server_(server), plan_(plan), sockets_(std::move(sockets)), derives_secret_(derives_secret) {}

  std::optional<MasterEndpoint> master() const override { return std::nullopt; }  // node 0 is here

  std::vector<std::unique_ptr<AgentLink>> links() override {
    std::vector<std::unique_ptr<AgentLink>> links;
    links.push_back(std::make_unique<LocalAgentLink>(display_name(plan_.hosts[0])));
    for (std::size_t i = 0; i < sockets_.size(); ++i) {
      const HostSlots& host = plan_.hosts[i + 1];
      const std::string node =
          "node " + std::to_string(i + 1) + " (" + display_name(host) + ", " + host.joined_from + ")";
      links.push_back(
          std::make_unique<NodeAgentLink>(display_name(host), node, std::move(sockets_[i]), derives_secret_));
    }
    return links;
  }

  // An elastic job's node that joined after the start.
  std::unique_ptr<AgentLink> link_later(const HostSlots& host, std::string* error) override {
    UniqueFd socket = server_.agent_for(host.host, kAgentsTimeout, error);
    if (!socket) return nullptr;
    const std::string node = "node " + display_name(host) + " (" + host.joined_from + ")";
    return std::make_unique<NodeAgentLink>(display_name(host), node, std::move(socket), derives_secret_);
  }

  EventSource* events() override { return &server_; }

 private:
  NodeServer& server_;
  const JobPlan& plan_;
  std::vector<UniqueFd> sockets_;
  bool derives_secret_;
};

}  // namespace

std::vector<std::string> Node0Mode::agent_choices(const PlannedJob& planned) const {
  std::vector<std::string> lines = planned.remote.choices();
  const std::vector<HostSlots>& hosts = planned.plan.hosts;
  lines.push_back("node 0 (" + display_name(hosts[0]) + "): this trainrun, its ranks on a local agent");
  for (std::size_t i = 1; i < hosts.size(); ++i) {
    lines.push_back("node " + std::to_string(i) + " (" + display_name(hosts[i]) + "): joined from " +
                    hosts[i].joined_from + ", its own trainrun starts its agent");
  }
  return lines;
}

AgentStart Node0Mode::start(const Options&, const PlannedJob& planned, ReportRecorder& report) const {
  NodeServer::Agents agents = server_.agents(runs_++, kAgentsTimeout);
  if (agents.sockets.size() + 1 != planned.plan.hosts.size()) {
    const std::string line =
        "trainrun: error: " + (agents.error.empty() ? std::string("the nodes changed between runs") : agents.error);
    std::cerr << line << "\n";
    report.failed("launch_failed", line);
    return {nullptr, kExitLaunch};
  }
  return {std::make_unique<NodeAgents>(server_, planned.plan, std::move(agents.sockets), secret_.has_value()), 0};
}

rendezvous::Secret Node0Mode::job_secret(const std::string& job_id) const {
  return secret_ ? ranks_secret(*secret_, job_id) : rendezvous::generate_secret();
}

}  // namespace trainrun::cli::node
