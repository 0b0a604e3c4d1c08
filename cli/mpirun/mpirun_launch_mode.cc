#include "cli/mpirun/mpirun_launch_mode.h"

#include "cli/mpirun/mpirun_launcher.h"

namespace trainrun::cli {

int MpirunLaunchMode::run(const Options& options, ReportRecorder& report, AgentLauncher&) const {
  return run_mpirun(options, report);
}

LaunchModeChoice choose_mpirun(const Options& options, const GetEnv&) {
  if (options.launcher != "mpirun") return {};
  return {std::make_unique<MpirunLaunchMode>(), ""};
}

}  // namespace trainrun::cli
