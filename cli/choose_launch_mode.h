// The one place that knows every launch mode (cli/mode/launch_mode.h):
// which one runs a job, from its options and the environment. A new mode
// is a folder with its chooser plus one line here.
#pragma once

#include "cli/mode/launch_mode.h"
#include "cli/plan/job_plan.h"
#include "cli/plan/options.h"

namespace trainrun::cli {

// The mode, or the usage error (exit 2: nothing starts) without one.
LaunchModeChoice choose_launch_mode(const Options& options, const GetEnv& getenv);

}  // namespace trainrun::cli
