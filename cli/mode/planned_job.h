// What every launch mode starts from: the job's plan (hosts and ranks, from
// -H, --hostfile or this machine) and what the launcher decided about the
// network and the hosts that are not this machine. Planned anew for every
// run of the job; also for `trainrun doctor`.
#pragma once

#include <optional>
#include <string>

#include "cli/plan/job_plan.h"
#include "cli/plan/options.h"
#include "cli/plan/program_path.h"
#include "cli/ssh/remote_plan.h"

namespace trainrun::cli {

struct PlannedJob {
  JobPlan plan;
  RemotePlan remote;
};
// nullopt after printing the usage error (exit 2), which also goes to
// `*error_line` when given.
std::optional<PlannedJob> plan_job(const Options& options, std::string* error_line = nullptr);
// trainrun's working directory.
std::string current_directory();
// The directory every rank starts in: -wdir, relative to trainrun's
// working directory, else that directory itself.
std::string job_directory(const Options& options);
// The job's program as its ranks here will find it (cli/plan/program_path.h):
// a relative name with a '/' from inside -wdir. A -wdir that is no directory
// here is the error instead, exit 2.
ProgramLookup find_job_program(const Options& options);

}  // namespace trainrun::cli
