// Runs the job the command line describes: plan it, check the program,
// start the rendezvous and one agent per host, supervise, report. Returns
// trainrun's exit status (man/trainrun.1).
#pragma once

#include "cli/options.h"

namespace trainrun::cli {

int launch(const Options& options);

}  // namespace trainrun::cli
