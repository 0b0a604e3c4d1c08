#include "cli/elastic/hang_detector.h"

#include <doctest/doctest.h>

using trainrun::cli::elastic::HangDetector;
using Clock = HangDetector::Clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

TEST_CASE("a worker whose heartbeat stops for the timeout is hung, once; one that beats is not") {
  HangDetector d(seconds(10));
  const auto t0 = Clock::now();
  d.settled(t0);
  d.beat(0, "1", t0);
  d.beat(1, "1", t0);
  for (int s = 1; s <= 20; ++s) d.beat(0, std::to_string(s + 1), t0 + seconds(s));  // 0 keeps beating
  d.beat(1, "1", t0 + seconds(9));                                                  // 1 does not
  CHECK(d.hung(t0 + milliseconds(9999)).empty());
  CHECK(d.hung(t0 + seconds(10)) == std::vector<int>{1});
  CHECK(d.hung(t0 + seconds(20)).empty());                 // reported once
  d.beat(1, "2", t0 + seconds(21));                        // it came back: judged afresh
  CHECK(d.hung(t0 + seconds(30)) == std::vector<int>{0});  // 0 stopped at 20
  CHECK(d.hung(t0 + seconds(31)) == std::vector<int>{1});
}

TEST_CASE("a re-form restarts every clock, and a worker that never beat is not judged") {
  HangDetector d(seconds(10));
  const auto t0 = Clock::now();
  d.settled(t0);
  d.beat(0, "1", t0);
  d.beat(1, std::nullopt, t0);
  d.settled(t0 + seconds(8));  // a new generation: beats pause while workers re-form
  CHECK(d.hung(t0 + seconds(17)).empty());
  CHECK(d.hung(t0 + seconds(18)) == std::vector<int>{0});
  d.forget(0);
  CHECK(d.hung(t0 + seconds(100)).empty());
}

TEST_CASE("timeout 0: nobody is ever hung") {
  HangDetector d(milliseconds(0));
  const auto t0 = Clock::now();
  d.beat(0, "1", t0);
  CHECK(d.hung(t0 + std::chrono::hours(10)).empty());
}
