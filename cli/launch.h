// Runs the job the command line describes: plan it, check the program,
// start the rendezvous and one agent per host, supervise, report. Returns
// trainrun's exit status (man/trainrun.1).
#pragma once

#include <string>

#include "cli/job_plan.h"
#include "cli/options.h"

namespace trainrun::cli {

int launch(const Options& options);

// The plan launch() makes (hosts from -H, --hostfile or this machine), for
// `trainrun doctor`; and the directory every rank starts in.
PlanResult plan_job(const Options& options);
std::string current_directory();

}  // namespace trainrun::cli
