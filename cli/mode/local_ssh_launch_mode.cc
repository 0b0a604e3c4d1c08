#include "cli/mode/local_ssh_launch_mode.h"

#include <cstdlib>
#include <iostream>

#include "cli/agent/local_agent_link.h"
#include "cli/job/job_state.h"
#include "cli/job/report_recorder.h"
#include "cli/plan/host_list.h"
#include "cli/plan/local_host.h"
#include "cli/process/wait_status.h"
#include "cli/ssh/check_table.h"
#include "cli/ssh/preflight.h"
#include "cli/tree/agent_tree.h"

namespace trainrun::cli {
namespace {

// One run's agents: the pre-flight's SSH links for remote hosts (relayed
// links for those a tree of agents starts further down), a local agent
// for this one.
class LocalSshAgents final : public JobAgents {
 public:
  LocalSshAgents(const Options& options, const PlannedJob& planned) : options_(options), planned_(planned) {}

  // Every remote host checked at once, its agent started; nothing starts
  // unless all pass. Returns trainrun's exit status when they did not.
  std::optional<int> check_remote_hosts(ReportRecorder& report);

  std::optional<MasterEndpoint> master() const override {
    if (!planned_.remote.is_remote(0)) return std::nullopt;
    return MasterEndpoint{remote_.answers[0].address, remote_.answers[0].free_port};
  }

  std::vector<std::unique_ptr<AgentLink>> links() override {
    const JobPlan& plan = planned_.plan;
    std::vector<std::unique_ptr<AgentLink>> agents;
    for (std::size_t i = 0, next_remote = 0; i < plan.hosts.size(); ++i) {
      agents.push_back(planned_.remote.is_remote(i) ? std::move(remote_.links[next_remote++])
                                                    : std::make_unique<LocalAgentLink>(display_name(plan.hosts[i])));
    }
    return agents;
  }

  std::unique_ptr<AgentLink> link_later(const HostSlots& host, std::string* error) override {
    if (is_local_host(host.host)) return std::make_unique<LocalAgentLink>(display_name(host));
    const ProbeRequest probe = planned_.remote.probe(job_directory(options_));
    RemoteAgents agents = start_remote_agents({host}, options_.remote, probe, false);
    if (agents.ok) return std::move(agents.links.front());
    *error = "the pre-flight checks failed";
    for (const CheckRow& row : agents.rows) {
      if (!row.ok) *error = row.check + ": " + row.result;  // the last: what stopped the checks
    }
    return nullptr;
  }

 private:
  const Options& options_;
  const PlannedJob& planned_;
  RemoteAgents remote_;  // the pre-flight's, when some host is remote
};

std::optional<int> LocalSshAgents::check_remote_hosts(ReportRecorder& report) {
  const RemotePlan& remote = planned_.remote;
  if (!remote.any_remote()) return std::nullopt;
  remote_ = start_agent_tree(remote.remote_hosts(), options_.remote, remote.probe(job_directory(options_)),
                             remote.tree_radix(), options_.verbose, true);
  if (remote_.signal) {
    const std::string line =
        "trainrun: received " + signal_name(remote_.signal) + " during the pre-flight checks; nothing was started";
    std::cerr << line << "\n";
    report.failed("signal", line);
    report.write(128 + remote_.signal);
    std::_Exit(128 + remote_.signal);  // host threads may still wait on the network
  }
  if (remote_.ok) return std::nullopt;
  const std::string text = preflight_failure_report(remote_.rows, remote.host_count());
  std::cerr << text;
  report.failed("preflight_failed", text.substr(0, text.find('\n')));
  return kExitLaunch;
}

}  // namespace

std::string LocalSshLaunchMode::name(const PlannedJob& planned) const {
  return planned.remote.any_remote() ? "ssh" : "local";
}

AgentReach LocalSshLaunchMode::reach(const PlannedJob& planned, std::size_t host) const {
  if (!planned.remote.is_remote(host)) return AgentReach::kChild;
  return planned.remote.is_relayed(host) ? AgentReach::kRelayed : AgentReach::kSsh;
}

std::vector<std::string> LocalSshLaunchMode::agent_choices(const PlannedJob& planned) const {
  return planned.remote.choices();
}

AgentStart LocalSshLaunchMode::start(const Options& options, const PlannedJob& planned, ReportRecorder& report) const {
  auto agents = std::make_unique<LocalSshAgents>(options, planned);
  if (const std::optional<int> failed = agents->check_remote_hosts(report)) return {nullptr, *failed};
  return {std::move(agents), 0};
}

}  // namespace trainrun::cli
