// `trainrun --launcher mpirun`: a job as one Open MPI 4 mpirun command line.
// Ranks started by mpirun learn their rank from OMPI_COMM_WORLD_*, so only
// job-level settings travel (-x); the MPI backend needs no rendezvous.
// Pure: reads no environment and starts nothing.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cli/plan/rank_env.h"
#include "cli/plan/rank_plan.h"

namespace trainrun::cli {

struct MpirunJob {
  std::string mpirun = "mpirun";  // the program to run
  int np = 1;
  std::vector<HostSlots> hosts;          // empty: every rank here (-H localhost:np)
  int local_cpus = 0;                    // CPUs here; fewer than np in a local job: ranks yield
  std::vector<std::string> forward_env;  // -x NAME: mpirun sends its own value
  EnvList job_env;                       // -x NAME=VALUE, e.g. TRAINRUN_BACKEND
  bool tag_output = true;                // --tag-output
  bool timestamp_output = false;         // --timestamp-output
  std::string bind_to = "none";          // --bind-to, as trainrun's option
  std::string map_by = "slot";           // --map-by, as given to trainrun
  bool report_bindings = false;          // --report-bindings
  std::string wdir;                      // --wdir: the ranks' working directory (empty: mpirun's)
  std::vector<std::string> mca;          // --mca NAME VALUE pairs, in order
  std::string mpi_args;                  // passed through, split like a shell would
  bool as_root = false;                  // adds --allow-run-as-root
  std::vector<std::string> command;      // the program and its arguments
};

// The argv to exec. Throws Error(InvalidArgument) naming the bad token: an
// environment name that is not [A-Za-z_][A-Za-z0-9_]*, a host without
// slots, or --mpi-args that do not split.
std::vector<std::string> mpirun_command(const MpirunJob& job);

}  // namespace trainrun::cli
