// What every launch mode starts from: the job's plan (hosts and ranks, from
// -H, --hostfile or this machine) and what the launcher decided about the
// network and the hosts that are not this machine. Planned anew for every
// run of the job; also for `trainrun doctor`.
#pragma once

#include <optional>
#include <string>

#include "cli/plan/job_plan.h"
#include "cli/plan/options.h"
#include "cli/ssh/remote_plan.h"

namespace trainrun::cli {

struct PlannedJob {
  JobPlan plan;
  RemotePlan remote;
};
// nullopt after printing the usage error (exit 2), which also goes to
// `*error_line` when given.
std::optional<PlannedJob> plan_job(const Options& options, std::string* error_line = nullptr);
// The directory every rank starts in.
std::string current_directory();

}  // namespace trainrun::cli
