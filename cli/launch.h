// Runs the job the command line describes, through the launch mode
// cli/choose_launch_mode.h picks. For a mode of trainrun's agents: plan
// the job, check the program, start the rendezvous and one agent per host
// as the mode says, supervise, report; --max-restarts runs it again.
// Returns trainrun's exit status (man/trainrun.1).
#pragma once

#include "cli/plan/options.h"

namespace trainrun::cli {

class ReportRecorder;
// `report` records the job for --report (cli/job/report_recorder.h).
int launch(const Options& options, ReportRecorder& report);

}  // namespace trainrun::cli
