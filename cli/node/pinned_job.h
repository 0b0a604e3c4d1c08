// What a node's trainrun makes of the job frames node 0 sends for its
// ranks in a per-node launch (cli/node): every rank runs this node's own
// command, in this node's own directory, with this node's environment and
// its own -x (and its own OMP_NUM_THREADS default); from node 0 it takes
// only what trainrun itself sets for a rank (TRAINRUN_*, HOROVOD_*, torch's
// and torchrun's names: where the rank is and whom it meets), so node 0 can place
// the ranks but never make this node run anything else (no PATH, no
// LD_PRELOAD, no PYTHONPATH from node 0). With a shared secret the ranks'
// TRAINRUN_SECRET is derived here, never received. Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/agent/agent_protocol.h"
#include "cli/node/node_protocol.h"
#include "cli/plan/rank_env.h"

namespace trainrun::cli::node {

struct OwnJob {
  std::vector<std::string> argv;  // this node's program and its arguments
  std::string cwd;                // this node's job directory (-wdir, else its working directory)
  EnvList env;                    // this node's -x (and the build tree's PYTHONPATH)
  SharedSecret secret;            // the job's shared secret, if any
};

// Whether node 0 may set `name` for this node's ranks.
bool node0_may_set(std::string_view name);

// `from_node0` with `own` pinned in: argv, cwd, the environment as above.
JobSpec pin_job(JobSpec from_node0, const OwnJob& own);

}  // namespace trainrun::cli::node
