// Runs the job the command line describes: plan it, check the program,
// start the rendezvous and one agent per host, supervise, report. Returns
// trainrun's exit status (man/trainrun.1).
#pragma once

#include "cli/plan/options.h"

namespace trainrun::cli {

class ReportRecorder;
// `report` records the job for --report (cli/job/report_recorder.h).
int launch(const Options& options, ReportRecorder& report);

}  // namespace trainrun::cli
