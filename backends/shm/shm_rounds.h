// ShmRounds: the one synchronisation the shared-memory collectives use. In
// a round every rank writes its data for the round, posts the round number
// on its control line, and waits until every peer has posted it too.
// Because a rank only writes a data parity again two rounds later, after
// every peer posted the round in between (and so finished reading), one
// barrier per round is all the collectives need.
//
// Waiting spins a few microseconds (no system call while the peers are
// running), then yields the CPU for up to `spin` (a peer that shares this
// CPU runs at once), then sleeps in futex_wait on the peer's word; a poster
// wakes sleepers only when there are any. With fewer CPUs than ranks the
// yielding phase is skipped, so a descheduled peer never costs a core. Asleep, a rank wakes
// every few milliseconds to check that the peers it still waits for live
// (`check_peer` throws naming a dead one; a peer that posted the round may
// have finished and exited), the collective timeout, and abort(), and says
// once per warning interval which peer it still waits for.
// One thread calls sync(); abort() may come from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "backends/shm/shm_layout.h"
#include "backends/call_descriptor.h"

namespace trainrun::detail {

class ShmRounds {
 public:
  struct Options {
    std::chrono::milliseconds timeout{1'800'000};
    std::chrono::nanoseconds spin{50'000};      // of yielding; 0: sleep after the pauses
    std::function<void(int)> check_peer;        // throws Error naming the peer if it died
    std::function<std::string(int)> peer_name;  // "rank 3 (pid 42)", for messages
    // Called once per `warn_interval` while a sync waits for `peer` (0: never).
    std::chrono::milliseconds warn_interval{0};
    std::function<void(int peer, std::chrono::seconds waited)> warn;
  };

  ShmRounds(ShmControlLine* lines, int index, int count, Options options);

  // The data parity the next sync() completes.
  int parity() const { return static_cast<int>((round_ + 1) & 1u); }
  // Posts the next round with `value` and waits for every peer to post it.
  // A non-empty `call` (the first round of a core call) is compared with
  // the peers' afterwards: a disagreement throws Error(Mismatch) on every
  // rank that posted one, naming the first rank that differs (the round is
  // complete, so the ranks stay in step for the calls after).
  void sync(std::uint64_t value = 0, CallDescriptor call = {});
  // The value rank `peer` posted with the last completed round.
  std::uint64_t value(int peer) const;
  void abort() noexcept;
  // A longer yielding phase than Options::spin for the syncs that follow
  // (0: back to Options::spin; nothing when Options::spin is 0), for
  // callers whose peers arrive from a network round: sleeping then costs a
  // wake-up on every call. A wait that runs out of it turns it off for
  // the next 256 waits (the peers are short of CPU).
  void set_spin(std::chrono::nanoseconds spin) { spin_ = spin; }

 private:
  void wait_for(int peer, std::uint32_t target);
  void sleep_on(int peer, std::uint32_t target);
  void report_mismatch() const;  // throws Error(Mismatch)

  ShmControlLine* const lines_;
  const int index_;
  const int count_;
  const Options options_;
  std::uint32_t round_ = 0;
  CallDescriptor posted_[2];  // what this rank's line holds, by parity
  std::atomic<bool> aborted_{false};
  std::chrono::nanoseconds spin_{0};
  int backoff_ = 0;  // waits left without the set_spin() phase
};

// The spin budget for `ranks` ranks on this host: none when they outnumber
// the CPUs this process may run on.
std::chrono::nanoseconds shm_spin_budget(int ranks);

}  // namespace trainrun::detail
