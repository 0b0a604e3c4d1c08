// Whether this trainrun is one of a per-node launch's (cli/node), and its
// settings: how many nodes, this node's rank, where node 0 is, how long to
// wait. Asked for by torchrun's options (--nnodes without hosts,
// --node-rank, --master-addr, --rdzv-endpoint, ...; torchrun's PET_*
// variables fill them, cli/plan/torchrun_options.cc), or found in the
// environment a scheduler sets for a plain `python train.py` (MASTER_ADDR,
// MASTER_PORT, RANK and WORLD_SIZE, as Kubeflow's PyTorchJob does). Pure
// given the environment.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli/plan/job_plan.h"
#include "cli/plan/options.h"

namespace trainrun::cli::node {

// The environment variable that may hold the shared secret itself.
inline constexpr const char* kEnvRdzvSecret = "TRAINRUN_RDZV_SECRET";

struct NodeSettings {
  int nnodes = 1;        // nodes the job starts with (MIN of MIN:MAX)
  int max_nnodes = 1;    // at most this many (MAX); == nnodes unless elastic
  bool elastic = false;  // --nnodes MIN:MAX: nodes may join late and leave
  int node_rank = -1;    // -1: node 0 assigns ranks in the order nodes join
  std::string master_host;
  std::uint16_t master_port = 0;
  std::string job_id;  // --rdzv-id, "none" by default (torchrun's)
  std::chrono::seconds join_timeout{600};
  std::chrono::seconds last_call{30};  // elastic: how long node 0 waits past MIN for more
  std::string secret_file;             // --rdzv-secret-file, or ""
  bool secret_from_env = false;        // TRAINRUN_RDZV_SECRET is set (and no file given)
  std::string source;                  // what asked for this mode, for --verbose
  std::vector<std::string> notes;      // --rdzv-conf keys without effect

  std::string endpoint() const;  // "HOST:PORT" ("[v6]:PORT")
};

struct NodeDecision {
  std::optional<NodeSettings> settings;  // nullopt: no per-node launch
  std::string error;                     // a usage error (exit 2); nothing starts
};

NodeDecision decide_node_mode(const Options& options, const GetEnv& getenv);

}  // namespace trainrun::cli::node
