#include "cli/srun/srun_launch_mode.h"

#include <algorithm>

#include "cli/process/self_executable.h"
#include "cli/plan/host_list.h"
#include "cli/plan/program_path.h"
#include "cli/plan/shell_words.h"
#include "cli/srun/srun_agent_link.h"

namespace trainrun::cli {
namespace {

// One run's agents: an srun step per host, started as the supervisor begins.
class SrunAgents final : public JobAgents {
 public:
  SrunAgents(const SrunMode& srun, const JobPlan& plan) : srun_(srun), plan_(plan) {}

  // No probe: launch.cc gives rank 0's host by its name.
  std::optional<MasterEndpoint> master() const override { return std::nullopt; }

  std::vector<std::unique_ptr<AgentLink>> links() override {
    std::vector<std::unique_ptr<AgentLink>> agents;
    for (const HostSlots& host : plan_.hosts) agents.push_back(step(host));
    return agents;
  }

  std::unique_ptr<AgentLink> link_later(const HostSlots& host, std::string*) override { return step(host); }

 private:
  std::unique_ptr<AgentLink> step(const HostSlots& host) const {
    return std::make_unique<SrunAgentLink>(display_name(host), srun_.agent_command(host.host));
  }

  const SrunMode& srun_;
  const JobPlan& plan_;
};

}  // namespace

int SrunLaunchMode::run(const Options& options, ReportRecorder& report, AgentLauncher& launcher) const {
  Options on_allocation = options;
  on_allocation.hosts = srun_.allocation.host_option();
  // The job's values of what the agent's step changes, as if forwarded
  // with -x; one the user forwards stays the user's.
  for (const std::string& entry : srun_.rank_env) {
    const std::string name = entry.substr(0, entry.find('='));
    const auto same_name = [&name](const std::string& item) { return item.substr(0, item.find('=')) == name; };
    if (std::none_of(options.env_forward.begin(), options.env_forward.end(), same_name)) {
      on_allocation.env_forward.push_back(entry);
    }
  }
  return launcher.launch(on_allocation, report, *this);
}

// The network's lines (remote.choices()) without the SSH destinations
// that follow them, then each host's step.
std::vector<std::string> SrunLaunchMode::agent_choices(const PlannedJob& planned) const {
  std::vector<std::string> lines = planned.remote.choices();
  lines.resize(lines.size() - planned.remote.remote_hosts().size());
  for (const HostSlots& host : planned.plan.hosts) {
    lines.push_back(display_name(host) + ": " + display_join(srun_.agent_command(host.host)));
  }
  return lines;
}

std::optional<std::string> SrunLaunchMode::dry_run_line() const {
  return srun_.allocation.description() + ": one srun step per host";
}

std::optional<std::string> SrunLaunchMode::announcement() const {
  if (!srun_.automatic) return std::nullopt;
  return srun_.announcement();
}

AgentStart SrunLaunchMode::start(const Options&, const PlannedJob& planned, ReportRecorder&) const {
  return {std::make_unique<SrunAgents>(srun_, planned.plan), 0};
}

LaunchModeChoice choose_srun(const Options& options, const GetEnv& getenv) {
  const ProgramLookup srun = find_program("srun", getenv("PATH"));
  const std::string agent = options.remote.remote_trainrun.empty() ? self_executable() : options.remote.remote_trainrun;
  SrunDecision decision = decide_srun_mode(options, getenv, srun.path, agent);
  if (!decision.mode) return {nullptr, decision.error};
  return {std::make_unique<SrunLaunchMode>(std::move(*decision.mode)), ""};
}

}  // namespace trainrun::cli
