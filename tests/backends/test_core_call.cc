#include <doctest/doctest.h>

#include <thread>

#include "backends/core_call.h"

using namespace trainrun::detail;

TEST_CASE("the current core call is per thread and nests") {
  CHECK(current_core_call() == nullptr);
  {
    const CoreCallScope outer(CoreOp::Allreduce, 7);
    REQUIRE(current_core_call() != nullptr);
    CHECK(current_core_call()->op == CoreOp::Allreduce);
    CHECK(current_core_call()->number == 7);
    const CoreCall* seen = &*current_core_call();
    std::thread([&] { seen = current_core_call(); }).join();
    CHECK(seen == nullptr);  // the engine's thread carries none
    {
      const CoreCallScope inner(CoreOp::Barrier, 8);
      CHECK(current_core_call()->number == 8);
    }
    CHECK(current_core_call()->number == 7);
  }
  CHECK(current_core_call() == nullptr);
}

TEST_CASE("the wait message names the rank, the call and the peer with its host") {
  const CoreCall call{CoreOp::Allreduce, 3, {}};
  CHECK(core_wait_message(0, "h1", call, 2, "h3, 10.0.0.3", std::chrono::seconds(60)) ==
        "trainrun: rank 0 (h1): waiting: allreduce (core call #3) has waited 60 s for rank 2 (h3, 10.0.0.3); "
        "still waiting");
}

// What an elastic worker's peer probe samples to know its collectives are stuck.
TEST_CASE("progress: collectives in progress and finished, core calls and engine cycles alike") {
  const CollectiveProgress before = collective_progress();
  CHECK(before.waiting == 0);
  {
    const CollectiveWait wait;
    CHECK(collective_progress().waiting == 1);
    { const CoreCallScope call(CoreOp::Barrier, 1); }
    CHECK(collective_progress().waiting == 1);
    CHECK(collective_progress().finished == before.finished + 1);
  }
  CHECK(collective_progress().waiting == 0);
  CHECK(collective_progress().finished == before.finished + 2);
}
