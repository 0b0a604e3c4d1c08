// Bad calls over the tcp backend's TCP mesh (--no-shm), in a real job:
// ranks that disagree on an alltoall's count, and a reducescatter whose
// buffers cannot be allocated. Each must be a trainrun::Error on the ranks
// (rank_program prints it and exits 1, so the job exits 1), never a hang
// and never an exception that escapes the library (terminate(): SIGABRT).
#include <doctest/doctest.h>

#include <string>

#include "tests/integration/trainrun_runner.h"

using namespace trainrun::test;
using std::chrono::seconds;

namespace {

// rank_program STEPS on NP ranks over TCP; checks what every case shares.
ProcessResult run_failing(const std::string& np, const std::vector<std::string>& steps) {
  std::vector<std::string> args{"--local", "-np", np, "--no-shm", rank_program(), "init"};
  args.insert(args.end(), steps.begin(), steps.end());
  std::string tag;
  ProcessOptions options;
  options.timeout = std::chrono::minutes(3);
  const ProcessResult r = run_trainrun(args, &tag, options);
  INFO(r.out, r.err);
  CHECK(!r.timed_out);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.err, ") exited with code 1; stopping the job"));
  CHECK(!contains(r.err, "SIGABRT"));
  CHECK(!contains(r.err, "terminate called"));
  CHECK(nothing_left(tag, seconds(5)));
  return r;
}

}  // namespace

TEST_CASE("alltoall with different counts on 2 ranks: the same Mismatch error on the ranks, exit 1") {
  const ProcessResult r = run_failing("2", {"alltoall:0:4", "alltoall:1:8"});
  CHECK(contains(r.out, ": alltoall error: rank "));
  CHECK(contains(r.out,
                 "): alltoall: the ranks' counts disagree: rank 1 sends 32 bytes to rank 0, which expects 16 "
                 "bytes from it\n"));
  CHECK(!contains(r.out, "alltoall ok"));
}

TEST_CASE("alltoall where one of 3 ranks passes another count: every rank that reports names the same pair") {
  const ProcessResult r = run_failing("3", {"alltoall:0:4", "alltoall:1:4", "alltoall:2:8"});
  CHECK(count(r.out, ": alltoall error: rank ") >= 1);
  CHECK(count(r.out, ": alltoall error: rank ") ==
        count(r.out, "the ranks' counts disagree: rank 2 sends 32 bytes to rank 0, which expects 16 bytes from it\n"));
  CHECK(!contains(r.out, "alltoall ok"));
}

TEST_CASE("reducescatter whose buffers exceed any allocation (std::length_error inside): an Error, exit 1") {
  const ProcessResult r = run_failing("2", {"reducescatter:" + std::to_string(1ULL << 60)});
  CHECK(contains(r.out, ": reducescatter error: rank "));
  CHECK(!contains(r.out, "reducescatter ok"));
}

TEST_CASE("reducescatter whose buffers cannot be allocated (std::bad_alloc inside): an Error, exit 1") {
  const ProcessResult r = run_failing("2", {"reducescatter:" + std::to_string(1ULL << 57)});
  CHECK(contains(r.out, ": reducescatter error: rank "));
  CHECK(!contains(r.out, "reducescatter ok"));
}
