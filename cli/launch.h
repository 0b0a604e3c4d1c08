// Runs the job the command line describes: plan it, check the program,
// start the rendezvous and one agent per host, supervise, report. Returns
// trainrun's exit status (man/trainrun.1).
#pragma once

#include <string>

#include <optional>

#include "cli/plan/job_plan.h"
#include "cli/plan/options.h"
#include "cli/ssh/remote_plan.h"

namespace trainrun::cli {

class ReportRecorder;
// `report` records the job for --report (cli/job/report_recorder.h).
int launch(const Options& options, ReportRecorder& report);

// What launch() plans before it starts anything: hosts and ranks (from
// -H, --hostfile or this machine), and the network and remote hosts.
struct PlannedJob {
  JobPlan plan;
  RemotePlan remote;
};
// nullopt after printing the usage error (exit 2), which also goes to
// `*error_line` when given. Also for `trainrun doctor`.
std::optional<PlannedJob> plan_job(const Options& options, std::string* error_line = nullptr);
// The directory every rank starts in.
std::string current_directory();

}  // namespace trainrun::cli
