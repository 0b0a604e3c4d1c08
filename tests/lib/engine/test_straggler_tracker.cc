#include <doctest/doctest.h>

#include "lib/engine/straggler_tracker.h"

using namespace trainrun::detail;
using std::chrono::microseconds;

namespace {

// The Min allreduce of every rank's exchange_input, as the backend does it.
std::vector<std::int64_t> reduce_min(const std::vector<StragglerTracker>& trackers) {
  std::vector<std::int64_t> out = trackers[0].exchange_input();
  for (const auto& t : trackers) {
    const auto mine = t.exchange_input();
    REQUIRE(mine.size() == out.size());
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = std::min(out[i], mine[i]);
  }
  return out;
}

// `size` ranks, `cycles` cycles: rank `slow` submits `lag_us` after the
// others, whose waits vary by rank a little (so "first" is well defined).
std::vector<StragglerTracker> run(int size, std::size_t window, std::size_t cycles, int slow, std::int64_t lag_us) {
  std::vector<StragglerTracker> trackers;
  for (int r = 0; r < size; ++r) trackers.emplace_back(r, size, window);
  for (std::size_t c = 0; c < cycles; ++c) {
    for (int r = 0; r < size; ++r) {
      const std::int64_t base = 500 + 10 * r + static_cast<std::int64_t>(c % 7);
      trackers[r].record(microseconds(r == slow ? base : base + lag_us));
    }
  }
  return trackers;
}

}  // namespace

TEST_CASE("the rank that waited least was last; its lag is the longest wait minus its own") {
  std::vector<StragglerTracker> t;
  for (int r = 0; r < 3; ++r) t.emplace_back(r, 3, 4);
  // Cycle waits (us): rank 0 waited 40 ms, rank 1 10 ms, rank 2 30 ms.
  for (int c = 0; c < 4; ++c) {
    t[0].record(microseconds(40'000));
    t[1].record(microseconds(10'000));
    t[2].record(microseconds(30'000));
  }
  CHECK(t[0].exchange_due());
  const auto reduced = reduce_min(t);
  for (auto& tracker : t) tracker.absorb(reduced);
  CHECK(t[0].window_cycles() == 4);
  CHECK(t[0].window_last() == std::vector<std::uint64_t>{0, 4, 0});
  CHECK(t[1].summary()[0] == doctest::Approx(30.0));  // window median, ms
  CHECK(t[2].summary()[0] == doctest::Approx(10.0));
  CHECK(t[0].summary()[0] == doctest::Approx(0.0));
  // The job-long quantiles come from a histogram: within 5 %.
  CHECK(t[1].summary()[2] == doctest::Approx(30.0).epsilon(0.05));
  CHECK_FALSE(t[0].exchange_due());
  CHECK(t[0].recorded() == 0);
}

TEST_CASE("a joined rank (no ops of its own) is never last and has no lag") {
  std::vector<StragglerTracker> t;
  for (int r = 0; r < 2; ++r) t.emplace_back(r, 2, 1);
  t[0].record(std::nullopt);
  t[1].record(microseconds(5));
  const auto reduced = reduce_min(t);
  for (auto& tracker : t) tracker.absorb(reduced);
  CHECK(t[0].window_last() == std::vector<std::uint64_t>{0, 1});
  CHECK(t[1].summary()[0] == doctest::Approx(0.0));
}

TEST_CASE("the warning names the slowed rank, its share and median lag; balanced ranks get none") {
  const std::vector<std::string> hosts{"h1", "h1", "h2", "h2"};
  auto t = run(4, 100, 100, 3, 41'000);
  const auto reduced = reduce_min(t);
  std::vector<StragglerTracker::Summary> summaries;
  for (auto& tracker : t) {
    tracker.absorb(reduced);
    summaries.push_back(tracker.summary());
  }
  const auto line = straggler_warning(t[0].window_last(), t[0].window_cycles(), 100, summaries, hosts, 50);
  REQUIRE(line);
  CHECK(*line == "rank 3 (h2) was last in 100% of the last 100 cycles, median lag 41 ms");
  // Below the threshold, or a window not full: nothing.
  CHECK_FALSE(straggler_warning(t[0].window_last(), t[0].window_cycles(), 100, summaries, hosts, 100));
  CHECK_FALSE(straggler_warning(t[0].window_last(), 60, 100, summaries, hosts, 50));

  // Who is last rotates: no rank passes 50 %.
  std::vector<StragglerTracker> balanced;
  for (int r = 0; r < 4; ++r) balanced.emplace_back(r, 4, 100);
  for (int c = 0; c < 100; ++c) {
    for (int r = 0; r < 4; ++r) balanced[r].record(microseconds(r == c % 4 ? 100 : 5'000));
  }
  const auto even = reduce_min(balanced);
  summaries.clear();
  for (auto& tracker : balanced) {
    tracker.absorb(even);
    summaries.push_back(tracker.summary());
  }
  CHECK(balanced[0].window_last() == std::vector<std::uint64_t>{25, 25, 25, 25});
  CHECK_FALSE(straggler_warning(balanced[0].window_last(), 100, 100, summaries, hosts, 50));
}

TEST_CASE("a rank last by less than a millisecond is noise, not a straggler") {
  auto t = run(2, 10, 10, 1, 300);
  const auto reduced = reduce_min(t);
  std::vector<StragglerTracker::Summary> summaries;
  for (auto& tracker : t) {
    tracker.absorb(reduced);
    summaries.push_back(tracker.summary());
  }
  CHECK(t[0].window_last()[1] == 10);
  CHECK_FALSE(straggler_warning(t[0].window_last(), 10, 10, summaries, {"a", "b"}, 50));
}

TEST_CASE("the table counts every window and round-trips through its text form") {
  auto t = run(2, 5, 5, 1, 20'000);
  const auto first = reduce_min(t);
  for (auto& tracker : t) tracker.absorb(first);
  for (int c = 0; c < 3; ++c) {
    t[0].record(microseconds(100));
    t[1].record(microseconds(20'100));
  }
  const auto second = reduce_min(t);
  std::vector<StragglerTracker::Summary> summaries;
  for (auto& tracker : t) {
    tracker.absorb(second);
    summaries.push_back(tracker.summary());
  }
  const auto rows = t[0].table(summaries, {"alpha", "beta gamma"});
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].cycles == 8);
  CHECK(rows[1].last == 5);
  CHECK(rows[0].last == 3);
  const auto decoded = decode_straggler_table(encode_straggler_table(rows));
  REQUIRE(decoded);
  REQUIRE(decoded->size() == 2);
  CHECK((*decoded)[1].host == "beta gamma");
  CHECK((*decoded)[1].median_lag_ms == doctest::Approx(rows[1].median_lag_ms).epsilon(0.001));
  CHECK_FALSE(decode_straggler_table("0 x 1 2 3 h\n"));
}
