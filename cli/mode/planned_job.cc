#include "cli/mode/planned_job.h"

#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <iostream>

#include "cli/job/job_state.h"
#include "cli/plan/local_host.h"
#include "cli/plan/printable.h"
#include "trainrun/error.h"

namespace trainrun::cli {

std::string current_directory() {
  char path[PATH_MAX];
  return ::getcwd(path, sizeof path) ? path : ".";
}

std::string job_directory(const Options& options) {
  if (options.wdir.empty()) return current_directory();
  return options.wdir.front() == '/' ? options.wdir : current_directory() + "/" + options.wdir;
}

ProgramLookup find_job_program(const Options& options) {
  const std::string& name = options.command.front();
  if (options.wdir.empty()) return find_program(name, std::getenv("PATH"));
  const std::string directory = job_directory(options);
  struct stat st {};
  if (::stat(directory.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    const bool exists = ::access(directory.c_str(), F_OK) == 0;
    return {
        std::nullopt,
        "-wdir " + printable(options.wdir, std::string::npos) + (exists ? ": not a directory" : ": no such directory"),
        kExitUsage};
  }
  const bool relative = name.find('/') != std::string::npos && name.front() != '/';
  return find_program(relative ? directory + "/" + name : name, std::getenv("PATH"));
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
