#include <doctest/doctest.h>

#include "lib/engine/coordinator.h"

using namespace trainrun;
using namespace trainrun::detail;
using Clock = Coordinator::Clock;

namespace {

Request req(const std::string& name, OpType op = OpType::Allreduce, std::vector<std::int64_t> shape = {4}) {
  Request r;
  r.name = name;
  r.op = op;
  r.shape = std::move(shape);
  return r;
}

std::vector<std::string> names(const std::vector<Response>& responses) {
  std::vector<std::string> out;
  for (const auto& r : responses) out.push_back(r.request.name);
  return out;
}

}  // namespace

TEST_CASE("an op is ready once every rank reported it, in first-report order") {
  Coordinator c(3);
  const auto now = Clock::now();
  c.report(0, {req("b"), req("a")}, now);
  c.report(1, {req("a")}, now);
  CHECK(c.take_ready().empty());
  c.report(2, {req("a"), req("b")}, now);
  c.report(1, {req("b")}, now);
  // b was reported first (by rank 0), so it runs first on every rank.
  CHECK(names(c.take_ready()) == std::vector<std::string>{"b", "a"});
  CHECK(c.empty());
  CHECK(c.take_ready().empty());
}

TEST_CASE("a disagreement is an error response for every rank") {
  Coordinator c(3);
  const auto now = Clock::now();
  c.report(1, {req("w", OpType::Allreduce, {2, 2})}, now);
  c.report(0, {req("w", OpType::Allreduce, {4})}, now);
  c.report(2, {req("w", OpType::Allreduce, {4})}, now);
  const auto ready = c.take_ready();
  REQUIRE(ready.size() == 1);
  CHECK(ready[0].error_code == Error::Code::Mismatch);
  // Rank 0, the lowest, is the reference.
  CHECK(ready[0].error == "allreduce 'w': rank 1 shape [2,2] != rank 0 shape [4]");
}

TEST_CASE("who is missing, and since when") {
  Coordinator c(4);
  const auto now = Clock::now();
  Request old = req("x");
  old.age_ms = 5000;  // waited on a cache hit before it was reported
  c.report(2, {old}, now);
  c.report(0, {req("x")}, now);
  const auto pending = c.pending();
  REQUIRE(pending.size() == 1);
  CHECK(pending[0].name == "x");
  CHECK(pending[0].missing == std::vector<int>{1, 3});
  CHECK(now - pending[0].since == std::chrono::milliseconds(5000));
  c.clear();
  CHECK(c.empty());
}

TEST_CASE("joined ranks count as reported; join completes when all joined") {
  Coordinator c(3);
  const auto now = Clock::now();
  c.report(1, {req("#join", OpType::Join)}, now);
  c.report(0, {req("g")}, now);
  c.report(2, {req("g")}, now);
  CHECK(names(c.take_ready()) == std::vector<std::string>{"g"});
  c.report(0, {req("#join", OpType::Join)}, now);
  CHECK(c.take_ready().empty());  // rank 2 has not joined
  c.report(2, {req("h")}, now);
  CHECK(names(c.take_ready()) == std::vector<std::string>{"h"});
  c.report(2, {req("#join", OpType::Join)}, now);
  const auto ready = c.take_ready();
  REQUIRE(ready.size() == 1);
  CHECK(ready[0].request.op == OpType::Join);
  CHECK(ready[0].last_joined == 2);
  // Nobody is joined any more: a new op needs every rank again.
  c.report(0, {req("i")}, now);
  CHECK(c.take_ready().empty());
  CHECK(c.pending()[0].missing == std::vector<int>{1, 2});
}

TEST_CASE("ops that need every rank fail while one has joined") {
  Coordinator c(2);
  const auto now = Clock::now();
  c.report(1, {req("#join", OpType::Join)}, now);
  Request bcast = req("b", OpType::Broadcast);
  bcast.root = 1;
  c.report(0, {req("a2a", OpType::Alltoall), bcast, req("#barrier.0", OpType::Barrier)}, now);
  const auto ready = c.take_ready();
  REQUIRE(ready.size() == 3);
  CHECK(ready[0].error == "alltoall 'a2a': rank 1 has joined (trainrun::join) and cannot take part");
  CHECK(ready[1].error == "broadcast 'b': rank 1 (the root) has joined (trainrun::join) and cannot take part");
  CHECK(ready[2].error_code == Error::Code::InvalidArgument);
  bcast.root = 0;
  c.report(0, {bcast, req("g", OpType::Allgather), req("rs", OpType::Reducescatter), req("ar")}, now);
  const auto after = c.take_ready();
  REQUIRE(after.size() == 4);
  // As in Horovod: even with the root here, only allreduces go on.
  CHECK(after[0].error == "broadcast 'b': rank 1 has joined (trainrun::join) and cannot take part");
  CHECK(after[1].error == "allgather 'g': rank 1 has joined (trainrun::join) and cannot take part");
  CHECK(!after[2].error.empty());
  CHECK(after[3].error.empty());
}

TEST_CASE("an allreduce of CUDA memory fails while a rank has joined: its neutral input would be host memory") {
  Coordinator c(2);
  const auto now = Clock::now();
  c.report(1, {req("#join", OpType::Join)}, now);
  Request on_gpu = req("grad");
  on_gpu.device = 0;
  c.report(0, {on_gpu, req("host")}, now);
  const auto ready = c.take_ready();
  REQUIRE(ready.size() == 2);
  CHECK(ready[0].error ==
        "allreduce 'grad': rank 1 has joined (trainrun::join) and cannot take part in an op on CUDA memory");
  CHECK(ready[1].error.empty());
}

TEST_CASE("a rank reporting a name twice is an engine bug") {
  Coordinator c(2);
  c.report(0, {req("a")}, Clock::now());
  CHECK_THROWS_AS(c.report(0, {req("a")}, Clock::now()), Error);
}

TEST_CASE("out of step: every pending op fails naming the ranks it lacks, but the barrier some rank waits in") {
  Coordinator c(3);
  const auto now = Clock::now();
  c.report(0, {req("#barrier.0", OpType::Barrier)}, now);
  c.report(1, {req("grad.1")}, now);
  c.report(2, {req("grad.1"), req("grad.2", OpType::Reducescatter)}, now);
  const std::vector<Response> failed = c.fail_out_of_step("1 s (TRAINRUN_STALL_WARNING)");
  REQUIRE(names(failed) == std::vector<std::string>{"grad.1", "grad.2"});  // first-report order
  for (const Response& r : failed) CHECK(r.error_code == Error::Code::Mismatch);
  CHECK(failed[0].error ==
        "allreduce 'grad.1': the ranks are out of step: every rank waited 1 s (TRAINRUN_STALL_WARNING) for ops that "
        "cannot complete, and rank 0 has not submitted this one (rank 0 waits in barrier(): did an error on some "
        "ranks skip ops the others made?)");
  CHECK(failed[1].error.find("and ranks 0, 1 have not submitted this one") != std::string::npos);
  // The barrier stays: ranks 1 and 2, their ops failed, reach it next.
  REQUIRE(c.pending().size() == 1);
  c.report(1, {req("#barrier.0", OpType::Barrier)}, now);
  c.report(2, {req("#barrier.0", OpType::Barrier)}, now);
  CHECK(names(c.take_ready()) == std::vector<std::string>{"#barrier.0"});
}

TEST_CASE("out of step with only barriers pending (numbered differently): those fail too") {
  Coordinator c(2);
  const auto now = Clock::now();
  c.report(0, {req("#barrier.1", OpType::Barrier)}, now);
  c.report(1, {req("#barrier.0", OpType::Barrier)}, now);
  const std::vector<Response> failed = c.fail_out_of_step("60 s (TRAINRUN_STALL_WARNING)");
  CHECK(names(failed) == std::vector<std::string>{"#barrier.1", "#barrier.0"});
  CHECK(failed[0].error ==
        "barrier '#barrier.1': the ranks are out of step: every rank waited 60 s "
        "(TRAINRUN_STALL_WARNING) for ops that cannot complete, and rank 1 has not submitted this one");
  CHECK(c.empty());
}

// Issue 37: a process set's engine numbers its ranks 0..n-1. Its errors name
// the set and job ranks, never a job rank outside the set (rank 0 here).
TEST_CASE("in a process set, errors name the set and job ranks") {
  World world;
  world.members = {1, 2};
  world.set_id = 1;
  Coordinator c(2, RankNames(world));
  const auto now = Clock::now();
  c.report(0, {req("x", OpType::Allreduce, {1}), req("y")}, now);
  c.report(1, {req("x", OpType::Allreduce, {2})}, now);
  const auto ready = c.take_ready();
  REQUIRE(ready.size() == 1);
  CHECK(ready[0].error == "allreduce 'x' in process set 1 (ranks 1, 2): rank 2 shape [2] != rank 1 shape [1]");
  const auto failed = c.fail_out_of_step("1 s (TRAINRUN_STALL_WARNING)");
  REQUIRE(failed.size() == 1);
  CHECK(failed[0].error ==
        "allreduce 'y' in process set 1 (ranks 1, 2): the ranks are out of step: every rank waited 1 s "
        "(TRAINRUN_STALL_WARNING) for ops that cannot complete, and rank 2 has not submitted this one");
}
