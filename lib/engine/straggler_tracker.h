// StragglerTracker: which rank holds the others up, at the cost of a few
// arithmetic operations per cycle and two small collectives every `window`
// cycles. Every cycle that runs ops, each rank notes how long the last of
// them that it submitted had waited when the cycle's collectives made them
// ready (cache hits and negotiated ops alike: the moment comes after a
// collective, so it is about the same on every rank, and no two hosts'
// clocks are ever compared). The rank that waited least submitted last; its
// lag behind the first rank is the longest wait minus its own. Every rank
// runs the same ops in the same cycles, so every rank counts the same
// cycles, and every `window` of them the ranks combine their waits in one
// Min allreduce of 2 x window int64 (exchange_input, absorb): per cycle,
// who was last and the longest wait. Each rank then knows its own lags and
// every rank's "last" counts; rank 0 gathers the per-rank summaries
// (summary(), a small allgather) for the table and the warning. Pure; not
// thread-safe (the engine thread owns it).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "contract/straggler_table.h"

namespace trainrun::detail {

class StragglerTracker {
 public:
  static constexpr std::int64_t kAbsent = std::numeric_limits<std::int64_t>::max();
  static constexpr int kMaxRanks = 1 << 20;  // rank ids share an int64 with the wait
  // Per rank, in ms: the last window's median and p95 lag, the whole job's.
  using Summary = std::array<double, 4>;

  StragglerTracker(int rank, int size, std::size_t window);

  // The cycle that just made ops ready: this rank's wait for the last one it
  // submitted, nullopt when it had none of them (it has joined).
  void record(std::optional<std::chrono::microseconds> wait);
  bool exchange_due() const { return waits_.size() >= window_; }
  std::size_t recorded() const { return waits_.size(); }
  std::size_t window() const { return window_; }

  // What this rank contributes to the Min allreduce.
  std::vector<std::int64_t> exchange_input() const;
  // The allreduce's result: counts who was last, this rank's lags; starts a
  // new window.
  void absorb(const std::vector<std::int64_t>& reduced);
  Summary summary() const;

  // After absorb: the window just closed.
  std::size_t window_cycles() const { return window_cycles_; }
  const std::vector<std::uint64_t>& window_last() const { return window_last_; }
  // The job so far, from every rank's summary (rank 0 after the allgather).
  std::vector<StragglerRow> table(const std::vector<Summary>& summaries, const std::vector<std::string>& hosts) const;

 private:
  const int rank_;
  const int size_;
  const std::size_t window_;
  std::vector<std::int64_t> waits_;  // us, or kAbsent
  std::vector<std::uint64_t> last_, window_last_;
  std::uint64_t cycles_ = 0;
  std::size_t window_cycles_ = 0;
  std::vector<double> window_lags_ms_;    // this rank's, last window
  std::vector<std::uint64_t> histogram_;  // this rank's lags, whole job
};

// Rank 0's one line when `rank` was last in more than `pct` percent of a
// full window's cycles (and lagged at least 1 ms at the median: below
// that, "last" is noise), e.g. "rank 3 (h2) was last in 92% of the last
// 500 cycles, median lag 41 ms". The rank most often last is named.
std::optional<std::string> straggler_warning(const std::vector<std::uint64_t>& window_last, std::size_t window_cycles,
                                             std::size_t window,
                                             const std::vector<StragglerTracker::Summary>& summaries,
                                             const std::vector<std::string>& hosts, double pct);

}  // namespace trainrun::detail
