// A child's wait() status in words and as a shell reports it: shared by
// everything in cli that reaps a process (job state, the report, mpirun,
// the host discovery script). Pure functions.
#pragma once

#include <string>

namespace trainrun::cli {

std::string signal_name(int sig);  // "SIGSEGV", or "signal N" for one without a name
// A wait() status as a shell reports it: the exit code, or 128 + signal.
int shell_status(int wait_status);

}  // namespace trainrun::cli
