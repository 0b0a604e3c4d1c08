// `trainrun doctor -H host1,host2 [program]`: the pre-flight checks of a
// launch (connect, host key, login, remote trainrun and its version, the
// program if one is given, the directory, the network address) for every
// host, then a reachability matrix: can each host reach the rendezvous
// address and a port in the ephemeral range (where the tcp backend listens) on each
// other host. Starts no rank. Prints both tables; returns 0 when
// everything passed, 1 otherwise (2 for usage errors).
#pragma once

#include "cli/plan/options.h"

namespace trainrun::cli {

int run_doctor(const Options& options);

}  // namespace trainrun::cli
