// Runs a job whose ranks all live on this machine: rendezvous server on
// loopback with a fresh secret, one process (group) per rank, supervision
// until every rank has exited. Returns trainrun's exit status.
#pragma once

#include "cli/options.h"

namespace trainrun::cli {

int run_local(const Options& options);

}  // namespace trainrun::cli
