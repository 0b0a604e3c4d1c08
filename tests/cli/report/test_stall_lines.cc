#include <doctest/doctest.h>

#include "cli/report/stack_dumps.h"
#include "cli/report/stall_lines.h"

using namespace trainrun::cli::report;
using Clock = std::chrono::steady_clock;

TEST_CASE("the library's stall lines are told apart from everything else") {
  CHECK(classify_stall_line("trainrun: rank 0 (h1): stall: 1 op(s) waited more than 1 s for other ranks: "
                            "allreduce 'x' (missing rank 1)") == StallLine::Warning);
  CHECK(classify_stall_line("trainrun: rank 3 (h2): waiting: allreduce (core call #4) has waited 5 s for rank 1 "
                            "(h1, 10.0.0.1); still waiting") == StallLine::Warning);
  CHECK(classify_stall_line("trainrun: rank 0 (h1): stall: an op waited more than 2 s (TRAINRUN_STALL_SHUTDOWN), "
                            "so the engine stopped and failed every pending op") == StallLine::Shutdown);
  CHECK(classify_stall_line("trainrun: rank 1 (h1): stall: the engine waited more than 2 s (TRAINRUN_STALL_SHUTDOWN) "
                            "for the other ranks' engines, so it aborted the backend") == StallLine::Shutdown);
  CHECK(classify_stall_line("rank 0: stall: my own text") == StallLine::None);
  CHECK(classify_stall_line("trainrun: rank 0 (h1): allreduce: no progress") == StallLine::None);
}

TEST_CASE("lines split across chunks are recognised once complete, and the view keeps each rank's last") {
  StallWatch watch;
  const auto t0 = Clock::now();
  CHECK(watch.add(2, "noise\ntrainrun: rank 2 (h1): wait", t0) == StallLine::None);
  CHECK(watch.add(2, "ing: barrier (core call #1) has waited 3 s for rank 0 (h1, 1.2.3.4); still waiting\n", t0) ==
        StallLine::Warning);
  CHECK(watch.add(0, "trainrun: rank 0 (h1): stall: an op waited more than 2 s, so the engine stopped\r\n", t0) ==
        StallLine::Shutdown);
  const auto view = watch.view(t0 + std::chrono::seconds(4));
  REQUIRE(view.size() == 2);
  CHECK(view[0].find("(4 s ago) trainrun: rank 0 (h1): stall: an op waited") == 0);
  CHECK(view[1].find("(4 s ago) trainrun: rank 2 (h1): waiting: barrier (core call #1)") == 0);
}

TEST_CASE("a dump groups the answers, notes missing ones, and stall warnings trigger one per interval") {
  StackDumps::Options options;
  options.on_stall_warning = true;
  options.stall_warning_s = 10;
  StackDumps dumps(options, {"h1", "h1", "h2"});
  const auto t0 = Clock::now();
  const std::string warning =
      "trainrun: rank 1 (h1): waiting: allreduce (core call #2) has waited 10 s for rank 2 "
      "(h2, 10.0.0.2); still waiting\n";
  const auto request = dumps.stderr_bytes(1, warning, t0);
  REQUIRE(request);
  CHECK(request->reason == "a stall warning (--stacks-on-stall)");
  CHECK(request->skip.empty());
  CHECK_FALSE(dumps.stderr_bytes(0, warning, t0 + std::chrono::seconds(1)));  // the same interval
  CHECK(dumps.begin({"SIGQUIT", {}}, {"h1", "h2"}, t0));
  CHECK_FALSE(dumps.begin({"SIGQUIT", {}}, {"h1", "h2"}, t0));  // one at a time
  const std::string stack = "PID 1 - process p\nTID 1:\n#0  0x1 poll\n";
  dumps.add(0, false, stack);
  dumps.add(1, false, stack);
  dumps.host_done("h1", "");
  CHECK_FALSE(dumps.due(t0 + std::chrono::seconds(1)));
  dumps.host_done("h2", "eu-stack is not installed on this host (Debian/Ubuntu: apt-get install elfutils)");
  REQUIRE(dumps.due(t0 + std::chrono::seconds(1)));
  const std::string text = dumps.finish(t0 + std::chrono::seconds(2));
  CHECK(text.find("trainrun: stacks of every rank (SIGQUIT), 2 groups:\nranks 0-1 (h1):\n  thread 1:\n    poll\n") ==
        0);
  CHECK(text.find("rank 2 (h2): no stack: eu-stack is not installed on this host (Debian/Ubuntu: apt-get install "
                  "elfutils)\n") != std::string::npos);
  CHECK(text.find("  (2 s ago) trainrun: rank 1 (h1): waiting: allreduce (core call #2)") != std::string::npos);
  CHECK_FALSE(dumps.in_progress());
  CHECK(dumps.stderr_bytes(1, warning, t0 + std::chrono::seconds(10)));  // the next interval
}

TEST_CASE("an agent that never answers is named after the answer limit") {
  StackDumps::Options options;
  options.answer_limit = std::chrono::milliseconds(500);
  StackDumps dumps(options, {"h1", "h2"});
  const auto t0 = Clock::now();
  REQUIRE(dumps.begin({"--timeout 10 s expired", {}}, {"h1", "h2"}, t0));
  dumps.add(0, false, "PID 1 - process p\nTID 1:\n#0  0x1 poll\n");
  dumps.host_done("h1", "");
  CHECK_FALSE(dumps.due(t0));
  REQUIRE(dumps.due(t0 + std::chrono::seconds(1)));
  const std::string text = dumps.finish(t0 + std::chrono::seconds(1));
  CHECK(text.find("rank 1 (h2): no stack: no answer from its agent") != std::string::npos);
  CHECK(text.find("no rank has reported waiting ops yet") != std::string::npos);
}

TEST_CASE("the stall shutdown leaves alone the ranks that reported it, and names them") {
  StackDumps dumps({}, {"h1", "h1", "h2"});
  const auto t0 = Clock::now();
  const std::string shutdown =
      "trainrun: rank 0 (h1): stall: the engine waited more than 2 s "
      "(TRAINRUN_STALL_SHUTDOWN) for the other ranks' engines, so it aborted the backend "
      "and failed every pending op\n";
  const auto request = dumps.stderr_bytes(0, shutdown, t0);
  REQUIRE(request);
  CHECK(request->reason == "the engine's stall shutdown");
  CHECK(request->skip == std::vector<int>{0});
  REQUIRE(dumps.begin(*request, {"h1", "h2"}, t0));
  dumps.add(1, false, "PID 2 - process p\nTID 2:\n#0  0x1 nanosleep\n");
  dumps.add(2, false, "PID 3 - process p\nTID 3:\n#0  0x1 nanosleep\n");
  dumps.host_done("h1", "");
  dumps.host_done("h2", "");
  REQUIRE(dumps.due(t0));
  const std::string text = dumps.finish(t0);
  CHECK(text.find("rank 0 (h1): no stack: not taken: it reported the stall shutdown and is on its way out (its "
                  "line is below)\n") != std::string::npos);
  CHECK(text.find("ranks 1-2 (h1, h2):\n  thread 1:\n    nanosleep\n") != std::string::npos);
  CHECK(text.find("  (0 s ago) " + shutdown.substr(0, shutdown.size() - 1)) != std::string::npos);  // its line
  // A later shutdown line of another rank: both are left alone next time.
  const std::string second =
      "trainrun: rank 2 (h2): stall: an op waited more than 2 s (TRAINRUN_STALL_SHUTDOWN), "
      "so the engine stopped and failed every pending op\n";
  CHECK(dumps.stderr_bytes(2, second, t0)->skip == std::vector<int>{0, 2});
}
