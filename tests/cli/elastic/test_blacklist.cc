#include <doctest/doctest.h>

#include <chrono>

#include "cli/elastic/blacklist.h"

using namespace trainrun::cli::elastic;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {
// A fake clock: any fixed point, moved by hand.
const Blacklist::Clock::time_point t0 = Blacklist::Clock::time_point{} + std::chrono::hours(1);
}  // namespace

TEST_CASE("one failure does not blacklist a host, the second does") {
  Blacklist list(seconds(30));
  CHECK_FALSE(list.rank_failed("h2", t0));
  CHECK_FALSE(list.blocked("h2", t0));
  CHECK(list.describe("h2", t0) == "h2 (1 failure)");
  CHECK(list.rank_failed("h2", t0 + seconds(1)));
  CHECK(list.blocked("h2", t0 + seconds(1)));
  CHECK_FALSE(list.blocked("h1", t0 + seconds(1)));
  CHECK(list.blocked_hosts(t0 + seconds(1)) == std::vector<std::string>{"h2"});
  CHECK_FALSE(list.rank_failed("h2", t0 + seconds(2)));  // already blacklisted: only counted
  CHECK(list.describe("h1", t0) == "h1");
}

TEST_CASE("a lost host is blacklisted at once") {
  Blacklist list(seconds(10));
  list.host_lost("h3", t0);
  CHECK(list.blocked("h3", t0));
  CHECK(list.describe("h3", t0 + milliseconds(7500)) == "h3 (lost; retried in 3 s)");
}

TEST_CASE("cooldown 0 blacklists for the rest of the job") {
  Blacklist list(milliseconds(0));
  list.rank_failed("h2", t0);
  CHECK(list.rank_failed("h2", t0));
  CHECK(list.blocked("h2", t0 + std::chrono::hours(1000)));
  CHECK(list.released(t0 + std::chrono::hours(1000)).empty());
  CHECK(list.describe("h2", t0) == "h2 (2 failures; blacklisted until the job ends)");
  list.host_lost("h4", t0);
  CHECK(list.describe("h4", t0) == "h4 (lost; blacklisted until the job ends)");
}

TEST_CASE("after the cooldown a host is released once, with its failures forgotten") {
  Blacklist list(seconds(20));
  list.rank_failed("h2", t0);
  list.rank_failed("h2", t0);
  CHECK(list.describe("h2", t0 + seconds(8)) == "h2 (2 failures; retried in 12 s)");
  CHECK(list.describe("h2", t0 + milliseconds(19100)) == "h2 (2 failures; retried in 1 s)");
  CHECK(list.released(t0 + milliseconds(19999)).empty());
  CHECK(list.blocked("h2", t0 + milliseconds(19999)));
  CHECK_FALSE(list.blocked("h2", t0 + seconds(20)));
  CHECK(list.released(t0 + seconds(20)) == std::vector<std::string>{"h2"});  // at the end, inclusive
  CHECK(list.released(t0 + seconds(21)).empty());                            // once
  CHECK(list.blocked_hosts(t0 + seconds(21)).empty());
  CHECK_FALSE(list.rank_failed("h2", t0 + seconds(22)));  // the count starts again
  CHECK(list.rank_failed("h2", t0 + seconds(23)));
  CHECK(list.blocked("h2", t0 + seconds(23)));
}

TEST_CASE("released() lists every host whose cooldown ended, sorted; the others stay") {
  Blacklist list(seconds(5), 1);
  CHECK(list.rank_failed("b", t0));
  list.host_lost("a", t0);
  CHECK(list.rank_failed("c", t0 + seconds(3)));
  CHECK(list.released(t0 + seconds(6)) == std::vector<std::string>{"a", "b"});
  CHECK(list.blocked_hosts(t0 + seconds(6)) == std::vector<std::string>{"c"});
  CHECK(list.released(t0 + seconds(8)) == std::vector<std::string>{"c"});
}
