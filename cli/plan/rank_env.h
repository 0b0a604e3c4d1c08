// The environment each rank starts with (docs/design.md §3): TRAINRUN_* plus the
// Horovod and torch compatibility names. Pure, no I/O.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/plan/rank_plan.h"

namespace trainrun::cli {

using EnvList = std::vector<std::pair<std::string, std::string>>;

inline constexpr int kRankStartMarginS = 5;

struct JobEnv {
  int size = 1;
  std::string rendezvous_addr;
  std::uint16_t rendezvous_port = 0;
  std::string job_id;
  std::string secret_hex;
  std::string backend;      // empty: the library decides
  std::string master_addr;  // torch env:// rendezvous (rank 0's host)
  std::uint16_t master_port = 0;
  int start_timeout_s = 30;
  int restart_count = 0;  // whole-job restarts so far (--max-restarts)
  int max_restarts = 0;
  EnvList extra;  // forwarded by the user (-x)
};

EnvList rank_environment(const RankSlot& slot, const JobEnv& job);

// [A-Za-z_][A-Za-z0-9_]*: what -x and the launchers accept as a name.
bool is_env_name(std::string_view name);

// `base` with every name in `overrides` replaced or appended, as
// "NAME=value" strings ready for execve.
std::vector<std::string> merge_environment(const std::vector<std::string>& base, const EnvList& overrides);

}  // namespace trainrun::cli
