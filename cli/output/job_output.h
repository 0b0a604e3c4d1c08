// The console and file settings of a job's OutputRouter, from trainrun's
// output options and the rank plan: the same under every launcher. Pure.
#pragma once

#include "cli/output/output_router.h"
#include "cli/plan/job_plan.h"
#include "cli/plan/options.h"

namespace trainrun::cli {

OutputRouter::Options job_output_options(const Options& options, const JobPlan& plan);

}  // namespace trainrun::cli
