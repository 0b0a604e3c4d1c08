#include <doctest/doctest.h>

#include "lib/engine/stall_inspector.h"

using namespace trainrun::detail;
using Clock = StallInspector::Clock;
using Seconds = StallInspector::Seconds;

namespace {

std::vector<Coordinator::Pending> waiting(Clock::time_point since) {
  return {{"fc.weight", OpType::Allreduce, since, {1}}, {"emb", OpType::Allgather, since, {1, 3}}};
}

}  // namespace

TEST_CASE("a warning after the warning time, once per stall, at most once per interval") {
  StallInspector inspector(Seconds(2), Seconds(0));
  const auto t0 = Clock::now();
  const auto pending = waiting(t0);
  CHECK_FALSE(inspector.warning(pending, t0 + std::chrono::milliseconds(1999)));
  const auto first = inspector.warning(pending, t0 + std::chrono::seconds(2));
  REQUIRE(first);
  CHECK(*first ==
        "stall: 2 op(s) waited more than 2 s for other ranks: allreduce 'fc.weight' (missing rank "
        "1); allgather 'emb' (missing ranks 1, 3)");
  CHECK_FALSE(inspector.warning(pending, t0 + std::chrono::milliseconds(3999)));
  // The same stall is not said again, however long it lasts.
  CHECK_FALSE(inspector.warning(pending, t0 + std::chrono::seconds(4)));
  CHECK_FALSE(inspector.warning(pending, t0 + std::chrono::seconds(60)));
  // A rank that submits makes no new stall; an op that joins it does.
  auto fewer = pending;
  fewer[1].missing = {3};
  CHECK_FALSE(inspector.warning(fewer, t0 + std::chrono::seconds(61)));
  fewer.push_back({"late", OpType::Allreduce, t0 + std::chrono::seconds(58), {2}});
  const auto grown = inspector.warning(fewer, t0 + std::chrono::seconds(62));
  REQUIRE(grown);
  CHECK(grown->find("allreduce 'late' (missing rank 2)") != std::string::npos);
  // Once nothing waits, the next stall is new, even of the same op.
  CHECK_FALSE(inspector.warning({}, t0 + std::chrono::seconds(70)));
  CHECK(inspector.warning(waiting(t0 + std::chrono::seconds(70)), t0 + std::chrono::seconds(72)));
}

// Issue 37: a process set's engine numbers its ranks 0..n-1; its lines name
// the set and job ranks.
TEST_CASE("a process set's stall names the set and the missing job ranks") {
  World world;
  world.members = {1, 2};
  world.set_id = 1;
  StallInspector inspector(Seconds(1), Seconds(2), RankNames(world));
  const auto t0 = Clock::now();
  const std::vector<Coordinator::Pending> pending = {{"grad", OpType::Allreduce, t0, {1}}};
  const auto line = inspector.warning(pending, t0 + std::chrono::seconds(1));
  REQUIRE(line);
  CHECK(*line ==
        "stall: process set 1 (ranks 1, 2): 1 op(s) waited more than 1 s for other ranks: allreduce 'grad' "
        "(missing rank 2)");
  CHECK(inspector.shutdown_message(pending).find("stall: process set 1 (ranks 1, 2): an op waited") == 0);
  CHECK(inspector.shutdown_message(pending).find("(missing rank 2)") != std::string::npos);
  world.set_id = -1;
  CHECK(RankNames(world).set() == "the process set of ranks 1, 2");
  world.members = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  world.set_id = 4;
  CHECK(RankNames(world).set() == "process set 4 (9 ranks)");
  CHECK(RankNames(world).ranks_text({0, 8}) == "ranks 0, 8");
  CHECK(RankNames().set().empty());
}

TEST_CASE("only ops past the warning time are named, at most eight") {
  StallInspector inspector(Seconds(0.5), Seconds(0));
  const auto t0 = Clock::now();
  std::vector<Coordinator::Pending> pending;
  for (int i = 0; i < 10; ++i) pending.push_back({"old" + std::to_string(i), OpType::Allreduce, t0, {0}});
  pending.push_back({"new", OpType::Allreduce, t0 + std::chrono::seconds(1), {0}});
  const auto text = inspector.warning(pending, t0 + std::chrono::seconds(1));
  REQUIRE(text);
  CHECK(text->find("stall: 10 op(s) waited more than 0.5 s") == 0);
  CHECK(text->find("'old7'") != std::string::npos);
  CHECK(text->find("'old8'") == std::string::npos);
  CHECK(text->find("; and 2 more") != std::string::npos);
  CHECK(text->find("'new'") == std::string::npos);
}

TEST_CASE("shutdown after the shutdown time, with a message naming what waits") {
  StallInspector inspector(Seconds(60), Seconds(3));
  const auto t0 = Clock::now();
  CHECK_FALSE(inspector.shutdown_due(waiting(t0), t0 + std::chrono::seconds(2)));
  CHECK(inspector.shutdown_due(waiting(t0), t0 + std::chrono::seconds(3)));
  CHECK(inspector.shutdown_message(waiting(t0)) ==
        "stall: an op waited more than 3 s (TRAINRUN_STALL_SHUTDOWN), so the engine stopped and failed every "
        "pending op; waiting: allreduce 'fc.weight' (missing rank 1); allgather 'emb' (missing ranks 1, 3)");
  CHECK(inspector.renegotiate_after() == std::chrono::seconds(3));
}

TEST_CASE("zero turns the checks off") {
  StallInspector off(Seconds(0), Seconds(0));
  const auto t0 = Clock::now();
  CHECK_FALSE(off.warning(waiting(t0), t0 + std::chrono::hours(1)));
  CHECK_FALSE(off.shutdown_due(waiting(t0), t0 + std::chrono::hours(1)));
  CHECK_FALSE(off.renegotiate_after());
  CHECK(StallInspector(Seconds(60), Seconds(0)).renegotiate_after() == std::chrono::seconds(60));
}

// The status allreduce blocks: before any cycle completed one rank's engine
// has not started; after many, one stopped answering (issue 23, item 10).
TEST_CASE("a blocked engine: 'not made it?' only before the first cycle, else since when") {
  const auto t0 = Clock::now();
  StallInspector cold(Seconds(2), Seconds(0));
  const auto first = cold.blocked_warning(std::chrono::seconds(2), t0, 0);
  REQUIRE(first);
  CHECK(*first ==
        "stall: the engine waited more than 2 s for the other ranks' engines (each starts at its rank's "
        "first engine call: has one not made it?)");
  StallInspector warm(Seconds(2), Seconds(0));
  CHECK_FALSE(warm.blocked_warning(std::chrono::milliseconds(1999), t0, 812));
  const auto later = warm.blocked_warning(std::chrono::milliseconds(2040), t0, 812);
  REQUIRE(later);
  CHECK(*later ==
        "stall: the engine waited more than 2 s for the other ranks' engines, which answered 812 cycle(s) "
        "until 2 s ago: one stopped answering (a stopped or hung process, or the network to it cut)");
  CHECK(later->find("not made it") == std::string::npos);
  // Once per wait: the same wait, later, is not said again; a new one is.
  CHECK_FALSE(warm.blocked_warning(std::chrono::milliseconds(9040), t0 + std::chrono::seconds(7), 812));
  CHECK(warm.blocked_warning(std::chrono::seconds(2), t0 + std::chrono::seconds(20), 900));
}
