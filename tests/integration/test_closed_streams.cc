// trainrun started with its stdin, stdout or stderr closed (`trainrun ...
// <&-`, a daemon's or cron's child): the job runs as usual, ends with its
// exit code, and leaves nothing behind. Before, a closed stdin let the
// rendezvous server's eventfd take descriptor 0, and forwarding "stdin" to
// rank 0 blocked trainrun on it for good, past SIGTERM.
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/integration/trainrun_runner.h"

using namespace trainrun::test;

namespace {

// trainrun -np 2 RANKS..., with `redirect` (e.g. "<&-") applied by a shell
// that then execs it; a minute at most (the old hang is cut short there).
ProcessResult run_with(const std::string& redirect, const std::string& rank_script, std::string* tag) {
  ProcessOptions options;
  options.timeout = std::chrono::seconds(60);
  options.env.push_back("TRAINRUN_BIN=" + trainrun_bin());
  options.env.push_back("OMP_NUM_THREADS=1");
  options.env.push_back(unique_tag());
  *tag = options.env.back();
  const std::string command = "exec \"$TRAINRUN_BIN\" -np 2 sh -c '" + rank_script + "' " + redirect;
  return run_process({"/bin/sh", "-c", command}, options);
}

}  // namespace

TEST_CASE("a closed stdin: the job runs, its ranks read EOF, trainrun exits 0 with every rank's output") {
  std::string tag;
  const ProcessResult r = run_with("<&-", "echo hi $TRAINRUN_RANK; cat; echo eof $TRAINRUN_RANK", &tag);
  CHECK_FALSE(r.timed_out);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.out, "[0] hi 0\n"));
  CHECK(contains(r.out, "[1] hi 1\n"));
  CHECK(contains(r.out, "[0] eof 0\n"));
  CHECK(contains(r.out, "[1] eof 1\n"));
  CHECK(nothing_left(tag, std::chrono::seconds(10)));
}

TEST_CASE("a closed stdout or stderr: the job runs and ends cleanly, the other stream gets its lines") {
  std::string tag;
  ProcessResult r = run_with(">&-", "echo to-err $TRAINRUN_RANK >&2", &tag);
  CHECK_FALSE(r.timed_out);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.err, "[0] to-err 0\n"));
  CHECK(nothing_left(tag, std::chrono::seconds(10)));

  r = run_with("2>&-", "echo hi $TRAINRUN_RANK", &tag);
  CHECK_FALSE(r.timed_out);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.out, "[1] hi 1\n"));
  CHECK(nothing_left(tag, std::chrono::seconds(10)));
}
