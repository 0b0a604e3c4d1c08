// StallInspector: decides when ops that wait for other ranks deserve a
// warning (once per stall: a line names the ops and the job ranks that have
// not submitted them, and a process set's line names the set; the next
// line comes when a new op or rank joins the stall, at most once per
// warning interval) and when the wait has lasted long enough to stop the
// engine. Rank 0 decides for everyone (the engine carries its
// decision in the cycle status), so ranks never disagree about a stall.
// Pure: time comes in as an argument. Not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lib/engine/coordinator.h"
#include "lib/engine/rank_names.h"

namespace trainrun::detail {

class StallInspector {
 public:
  using Clock = std::chrono::steady_clock;
  using Seconds = std::chrono::duration<double>;

  // Zero turns the warning or the shutdown off.
  StallInspector(Seconds warning, Seconds shutdown, RankNames names = {})
      : warning_(warning), shutdown_(shutdown), names_(std::move(names)) {}

  // A one-line warning when an op has waited longer than the warning time,
  // the last warning is at least that long ago and it did not name every
  // op and missing rank that waits now (one stall, one line).
  std::optional<std::string> warning(const std::vector<Coordinator::Pending>& pending, Clock::time_point now);
  bool shutdown_due(const std::vector<Coordinator::Pending>& pending, Clock::time_point now) const;
  // The error every pending op fails with after a stall shutdown.
  std::string shutdown_message(const std::vector<Coordinator::Pending>& pending) const;
  // The same for a cycle stuck in its status allreduce: the other ranks'
  // engines do not cycle, so no rank knows which ops wait; only that it
  // waits. With `answered` == 0 (no cycle ever completed) one has not made
  // its first engine call; after that, one stopped answering (a stopped or
  // hung process, a cut network), and the line says since when. Once per
  // wait (`waited` counts from the wait's start).
  std::optional<std::string> blocked_warning(Clock::duration waited, Clock::time_point now, std::uint64_t answered);
  bool blocked_shutdown_due(Clock::duration waited) const;
  std::string blocked_shutdown_message() const;
  // Every rank has waited this long, none of the pending ops can complete
  // and nothing completed: the ranks are out of step (Coordinator::
  // fail_out_of_step). After the warning time; never when warnings are off,
  // nor when a stall shutdown is set (that one ends the wait, as asked).
  bool out_of_step_due(Clock::duration stuck) const {
    return warning_.count() > 0 && shutdown_.count() == 0 && stuck >= warning_;
  }
  // "60 s (TRAINRUN_STALL_WARNING)": how long that is, for the error.
  std::string out_of_step_wait() const;
  // How long a request may wait on a cache hit before it is negotiated in
  // full, so that the coordinator sees which ranks are missing; nullopt
  // when neither check is on.
  std::optional<Clock::duration> renegotiate_after() const;

 private:
  // "process set 1 (ranks 1, 2): " on a set's engine, else "".
  std::string scope() const { return names_.set().empty() ? "" : names_.set() + ": "; }

  Seconds warning_;
  Seconds shutdown_;
  RankNames names_;
  std::optional<Clock::time_point> last_warning_;
  std::vector<std::string> warned_;                  // "name/missing" of each op the last warning named
  std::optional<Clock::time_point> warned_blocked_;  // the start of the wait last warned about
};

}  // namespace trainrun::detail
