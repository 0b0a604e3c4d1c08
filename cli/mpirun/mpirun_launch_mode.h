// MpirunLaunchMode (`--launcher mpirun`, `--mpi`): Open MPI's mpirun starts
// and watches the ranks, and trainrun runs it as a child with its own small
// supervisor (cli/mpirun/mpirun_launcher.h): no rendezvous and no agents.
#pragma once

#include "cli/mode/launch_mode.h"
#include "cli/plan/job_plan.h"

namespace trainrun::cli {

class MpirunLaunchMode final : public LaunchMode {
 public:
  // The whole job through mpirun; `launcher` is not needed.
  int run(const Options& options, ReportRecorder& report, AgentLauncher& launcher) const override;
};

// The mpirun mode when the command line asks for it; else no mode.
LaunchModeChoice choose_mpirun(const Options& options, const GetEnv& getenv);

}  // namespace trainrun::cli
