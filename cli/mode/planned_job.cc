#include "cli/mode/planned_job.h"

#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <iostream>

#include "cli/plan/local_host.h"
#include "trainrun/error.h"

namespace trainrun::cli {

std::string current_directory() {
  char path[PATH_MAX];
  return ::getcwd(path, sizeof path) ? path : ".";
}

std::optional<PlannedJob> plan_job(const Options& options, std::string* error_line) {
  std::string error;
  PlanResult planned = make_plan(options, this_host_name(), &std::getenv, read_text_file);
  try {
    // Multi-host: which hosts are remote, and which network the job uses.
    if (planned.plan) {
      RemotePlan remote(*planned.plan, options);
      return PlannedJob{std::move(*planned.plan), std::move(remote)};
    }
    error = planned.error;
  } catch (const Error& e) {
    error = e.what();
  }
  std::cerr << "trainrun: error: " << error << "\n";
  if (error_line) *error_line = "trainrun: error: " + error;
  return std::nullopt;
}

}  // namespace trainrun::cli
