// Coordinator: the negotiation's decision logic. Every rank feeds its copy
// the same reports in the same order (each cycle, every rank's newly
// submitted requests, rank by rank), so every copy makes the same decisions
// and no rank needs to broadcast them: an op is ready once every rank has
// reported it (a rank that joined counts as reported), and a ready op whose
// requests disagree becomes an error response. Ranks are the engine's (a
// process set's are 0..n-1); its error messages name job ranks and the set
// (RankNames). Pure and deterministic; not thread-safe (the engine thread
// owns it).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/engine/rank_names.h"
#include "lib/engine/request.h"
#include "trainrun/error.h"

namespace trainrun::detail {

// What every rank runs for one name this cycle; identical on every rank.
struct Response {
  Request request;    // the lowest reporting rank's request
  std::string error;  // non-empty: every rank fails the op with this message
  Error::Code error_code = Error::Code::Mismatch;
  int last_joined = -1;  // Join: the rank that joined last
};

// Whether `rank`, having joined, can still take part in `r` with neutral
// input: not in ops that need every rank's data (alltoall, barrier, core
// calls), nor in a broadcast it is the root of.
bool joined_rank_can_take_part(const Request& r, int rank);

class Coordinator {
 public:
  using Clock = std::chrono::steady_clock;

  explicit Coordinator(int size, RankNames names = {});

  // Rank `rank`'s newly submitted requests, in its submission order. `now`
  // dates them, less each request's age.
  void report(int rank, std::vector<Request> requests, Clock::time_point now);
  // Responses for the names that became ready, in the order they were first
  // reported.
  std::vector<Response> take_ready();

  struct Pending {
    std::string name;
    OpType op;
    Clock::time_point since;   // earliest submission among the reports
    std::vector<int> missing;  // ranks that have neither reported nor joined
  };
  std::vector<Pending> pending() const;
  // The ranks are out of step: every rank waits and none of the pending ops
  // can complete (say an exception on some ranks sent them on to a barrier
  // that the others, waiting for an op those ranks never submitted, have
  // not reached). Fails every pending op, naming the ranks it lacks, but
  // barriers, so that the ranks whose ops fail here can still reach them
  // and the ranks come back in step; only barriers pending: those fail.
  // `waited` says for how long ("60 s (TRAINRUN_STALL_WARNING)").
  std::vector<Response> fail_out_of_step(const std::string& waited);
  bool empty() const { return table_.empty(); }
  void clear();

 private:
  struct Entry {
    std::vector<std::optional<Request>> by_rank;
    std::uint64_t order = 0;
    Clock::time_point since;
    int last_reporter = -1;
  };
  bool complete(const Entry& entry) const;
  Pending pending_of(const std::string& name, const Entry& entry) const;
  Response respond(const Entry& entry) const;
  // "allreduce 'x': ..." -> "allreduce 'x' in process set 1 (ranks 1, 2): ...".
  std::string in_set(const Request& r, std::string error) const;

  const int size_;
  const RankNames names_;
  std::map<std::string, Entry> table_;
  std::vector<bool> joined_;
  std::uint64_t next_order_ = 0;
};

}  // namespace trainrun::detail
