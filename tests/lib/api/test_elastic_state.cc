// elastic::State in a world of one process (no TRAINRUN_ELASTIC): snapshot,
// restore and sync semantics, and run() as a plain init + sync + fn.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "trainrun/communicator.h"
#include "trainrun/elastic.h"

using trainrun::Error;
using trainrun::elastic::State;

namespace {

struct Pair {
  std::int64_t step;
  double loss;
};

}  // namespace

TEST_CASE("restore loads the last commit; before any commit it changes nothing") {
  State state;
  std::int64_t step = 5;
  std::string text = "a";
  state.add_value("step", step);
  state.add(
      "text", [&] { return text; }, [&](const std::string& bytes) { text = bytes; });
  state.restore();
  CHECK(step == 5);
  CHECK_FALSE(state.has_snapshot());

  state.commit();
  CHECK(state.commits() == 1);
  step = 9;
  text = "changed";
  state.restore();
  CHECK(step == 5);
  CHECK(text == "a");

  step = 11;
  state.commit();
  step = 12;
  state.restore();
  CHECK(step == 11);
  CHECK(state.commits() == 2);
  trainrun::shutdown();
}

TEST_CASE("a snapshot is a copy: later changes to the values do not reach it") {
  State state;
  Pair pair{1, 0.5};
  state.add_value("pair", pair);
  state.commit();
  pair = {2, 0.25};
  state.restore();
  CHECK(pair.step == 1);
  CHECK(pair.loss == 0.5);
  trainrun::shutdown();
}

TEST_CASE("sync keeps the state as its snapshot, without counting a commit") {
  State state;
  std::int64_t step = 3;
  state.add_value("step", step);
  state.sync();
  CHECK(state.has_snapshot());
  CHECK(state.commits() == 0);
  step = 4;
  state.restore();
  CHECK(step == 3);
  state.commit();
  step = 7;
  state.sync();  // a rank with a commit broadcasts the commit, not its current values
  CHECK(step == 3);
  trainrun::shutdown();
}

TEST_CASE("parts are named once and need both save and load") {
  State state;
  int a = 0;
  state.add_value("a", a);
  CHECK_THROWS_WITH_AS(state.add_value("a", a), "elastic state 'a' was added twice", Error);
  CHECK_THROWS_AS(state.add("b", nullptr, [](const std::string&) {}), Error);
  CHECK_THROWS_AS(state.add(
                      "c", [] { return std::string(); }, nullptr),
                  Error);
}

TEST_CASE("run outside an elastic job is init, sync and one call") {
  State state;
  std::int64_t step = 2;
  state.add_value("step", step);
  int calls = 0, resets = 0;
  state.on_reset([&] { ++resets; });
  trainrun::elastic::run(state, [&] {
    ++calls;
    CHECK(trainrun::is_initialized());
    step = 6;
    state.commit();
  });
  CHECK(calls == 1);
  CHECK(resets == 0);
  CHECK(step == 6);
  CHECK_FALSE(trainrun::elastic::enabled());
  CHECK(trainrun::elastic::generation() == 0);
  CHECK_THROWS_WITH_AS(trainrun::elastic::run(state, [] { throw Error(Error::Code::Io, "peer gone"); }), "peer gone",
                       Error);
  trainrun::shutdown();
}

TEST_CASE("HostsUpdated is an Error of code MembershipChanged") {
  const trainrun::elastic::HostsUpdated e("generation 3");
  CHECK(e.code() == Error::Code::MembershipChanged);
  CHECK(std::string(trainrun::to_string(e.code())) == "membership changed");
}
