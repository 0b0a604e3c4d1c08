// trainrun's command line: what the user asked for, parsed by CLI11 (the
// only translation unit that includes it; CLI11 costs ~15 s per TU).
#pragma once

#include <string>
#include <vector>

namespace trainrun::cli {

struct Options {
  int np = 0;
  bool local = false;
  std::string backend;
  int start_timeout_s = 30;
  double grace_s = 5.0;
  bool verbose = false;
  // --launcher mpirun (alias --mpi): hand the job to Open MPI's mpirun.
  std::string launcher = "local";  // "local" | "mpirun"
  std::string mpi_args;            // extra mpirun arguments, split like a shell would
  bool tag_output = true;          // mpirun --tag-output (off: --no-tag-output)
  bool dry_run = false;            // print the mpirun command instead of running it
  bool check_build = false;
  bool version = false;
  std::vector<std::string> command;  // program and its arguments, untouched
};

struct ParseResult {
  Options options;
  int exit_code = -1;  // >= 0: stop now with this status (help printed, or a usage error)
};

ParseResult parse_options(int argc, const char* const* argv);

// mpirun spells it -np; CLI11 allows one-letter short names only. Rewrites
// "-np" (and "-np=N") to "--np" in the option part of argv, never in the
// user's command, using `takes_value(token)` to skip option values.
std::vector<std::string> rewrite_np(const std::vector<std::string>& args,
                                    bool (*takes_value)(const std::string& token, void* ctx),
                                    void* ctx);

}  // namespace trainrun::cli
