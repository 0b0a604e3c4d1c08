// SrunLaunchMode: every host's agent is one Slurm job step, `srun ...
// trainrun agent` (cli/srun/srun_mode.h), run by trainrun as a child on
// pipes (cli/srun/srun_agent_link.h); the hosts and slots are the
// allocation's. Chosen by choose_srun inside an allocation without -H,
// --hostfile or --local, or with --launcher srun.
#pragma once

#include <utility>

#include "cli/mode/agent_mode.h"
#include "cli/plan/job_plan.h"
#include "cli/srun/srun_mode.h"

namespace trainrun::cli {

class SrunLaunchMode final : public AgentMode {
 public:
  explicit SrunLaunchMode(SrunMode srun) : srun_(std::move(srun)) {}

  // The job on the allocation's hosts and slots.
  int run(const Options& options, ReportRecorder& report, AgentLauncher& launcher) const override;
  std::string name(const PlannedJob&) const override { return "srun"; }
  AgentReach reach(const PlannedJob&, std::size_t) const override { return AgentReach::kOther; }
  std::vector<std::string> agent_choices(const PlannedJob& planned) const override;
  std::optional<std::string> dry_run_line() const override;
  std::optional<std::string> announcement() const override;
  AgentStart start(const Options& options, const PlannedJob& planned, ReportRecorder& report) const override;

 private:
  SrunMode srun_;
};

// The srun mode when the command line and the environment ask for it
// (srun looked up in getenv("PATH")); else no mode, or the usage error.
LaunchModeChoice choose_srun(const Options& options, const GetEnv& getenv);

}  // namespace trainrun::cli
