// From what the user typed to what will run: hosts (from -H, --hostfile or
// this machine), the rank layout, the console rank filter and the forwarded
// environment. Pure given the environment and file reader it is handed; every
// error names the bad token and is a usage error (exit 2, nothing started).
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cli/plan/options.h"
#include "cli/plan/rank_env.h"
#include "cli/plan/rank_plan.h"

namespace trainrun::cli {

struct JobPlan {
  std::vector<HostSlots> hosts;  // hosts that get at least one rank, in order
  std::vector<RankSlot> ranks;
  std::set<int> console_ranks;       // --rank-filter; empty: all
  EnvList forwarded;                 // -x
  bool omp_threads_default = false;  // OMP_NUM_THREADS=1 added: ranks share a host, the user set none
};

struct PlanResult {
  std::optional<JobPlan> plan;
  std::string error;
};

using GetEnv = std::function<const char*(const char*)>;
using ReadFile = std::function<std::optional<std::string>(const std::string& path, std::string* error)>;

// The ReadFile of a real run (it reads the hostfile): the whole file, or
// nullopt and why: strerror(errno), "is a directory", or "larger than 1 MiB
// ..." (kMaxHostfileBytes; it never holds more). A FIFO nobody writes to
// reads as empty instead of blocking.
std::optional<std::string> read_text_file(const std::string& path, std::string* error);

// `local_host_name` names this machine when no hosts are given.
PlanResult make_plan(const Options& options, const std::string& local_host_name, const GetEnv& getenv,
                     const ReadFile& read_file);

// What --verbose and --dry-run say about the transport the ranks' host
// buffers take (tcp: shared memory when every rank is on one host, unless
// --no-shm or TRAINRUN_SHM=0; else the TCP mesh); empty for one rank or a
// backend with its own transports.
std::string transport_choice(const Options& options, const JobPlan& plan, const GetEnv& getenv);

// "0,2,5-7" -> {0,2,5,6,7}; error names the bad item.
std::optional<std::set<int>> parse_rank_list(const std::string& text, int size, std::string* error);

}  // namespace trainrun::cli
