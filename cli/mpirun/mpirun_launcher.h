// Runs a job through Open MPI's mpirun (`trainrun --launcher mpirun`):
// translates the options (cli/mpirun/mpirun_command.h), runs mpirun as trainrun's
// child, forwards stop and user signals to it, and returns trainrun's exit
// status (the first failing rank's code as mpirun reports it, 128+N when
// trainrun was stopped by signal N, 127 when mpirun or the program is
// missing). Single-threaded; blocks signals while it supervises.
#pragma once

#include "cli/plan/options.h"

namespace trainrun::cli {

class ReportRecorder;
// `report` gets what trainrun knows of an mpirun job (cli/report).
int run_mpirun(const Options& options, ReportRecorder& report);

}  // namespace trainrun::cli
