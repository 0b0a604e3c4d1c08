// The core path's checks, in real 2-rank jobs (tests/integration/core_checks_program.cc):
// counts whose byte size overflows are InvalidArgument on every rank, over
// shared memory and over TCP; mismatched calls (dtype, root, allgatherv
// counts) are Mismatch on every rank naming the rank that differs, over
// shared memory always and over TCP with --check-calls, and never a hang;
// a child forked after init() fails its first collective (core or engine)
// at once while the parent's job completes. No process of a job is left.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tests/integration/trainrun_runner.h"

using namespace trainrun::test;

namespace {

std::string core_checks_program() { return program_path("CORE_CHECKS_PROGRAM"); }

// A 2-rank job of the program in `mode`; --timeout turns a hang into exit 124.
ProcessResult run_mode(const std::string& mode, std::vector<std::string> flags, std::string* tag) {
  std::vector<std::string> args = {"-np", "2", "--timeout", "60"};
  args.insert(args.end(), flags.begin(), flags.end());
  args.push_back(core_checks_program());
  args.push_back(mode);
  return run_trainrun(args, tag);
}

const std::vector<std::vector<std::string>> kTransports = {{}, {"--no-shm"}};

}  // namespace

TEST_CASE("a count whose bytes overflow is InvalidArgument on every rank, naming the op and the count") {
  for (const auto& flags : kTransports) {
    CAPTURE(flags.size());
    std::string tag;
    const ProcessResult r = run_mode("overflow", flags, &tag);
    INFO(r.out, r.err);
    CHECK(r.exit_code == 0);
    for (const std::string rank : {"rank 0", "rank 1"}) {
      for (const std::string op : {"allreduce", "broadcast", "reducescatter", "allgather", "alltoall"}) {
        CHECK(contains(r.out, rank + ": " + op + ": error (invalid argument): " + rank));
        CHECK(contains(r.out, ": " + op + ": count 18446744073709551615 of float32"));
      }
      CHECK(contains(r.out, rank + ": allgatherv: error (invalid argument): "));
      CHECK(contains(r.out, "allgatherv: counts[0] = 9223372036854775807 of uint8 brings the total to more than"));
      CHECK(contains(r.out, rank + ": engine: error (invalid argument): "));
      CHECK(contains(r.out, "allreduce_async: 'huge' has shape [4611686018427387904] of float32: more than"));
      CHECK(contains(r.out, rank + ": in step, sum=1"));
    }
    CHECK(contains(r.out, "(a negative count converted to size_t?)"));
    CHECK(count(r.out, ": returned") == 0);
    CHECK(nothing_left(tag));
  }
}

TEST_CASE("mismatched core calls are Mismatch on every rank, naming the rank that differs") {
  // What rank 1 did, then what rank 0 did; shared memory names the ranks'
  // host ("rank 1 (h1)"), the TCP check the ranks alone.
  const struct {
    const char* mode;
    const char* rank1;
    const char* rank0;
  } cases[] = {
      {"dtype", " called allreduce with dtype int32, rank 0", " with dtype float32"},
      {"root", " called broadcast with root 1, rank 0", " with root 0"},
      {"counts", " called allgatherv with other counts than rank 0", ""},
  };
  const std::vector<std::vector<std::string>> transports = {{}, {"--no-shm", "--check-calls"}};
  for (const auto& flags : transports) {
    for (const auto& c : cases) {
      CAPTURE(c.mode);
      CAPTURE(flags.size());
      std::string tag;
      const ProcessResult r = run_mode(c.mode, flags, &tag);
      INFO(r.out, r.err);
      CHECK(r.exit_code == 3);
      for (const std::string rank : {"rank 0", "rank 1"}) {
        CHECK(contains(r.out, rank + ": error (mismatch): " + rank));
        CHECK(contains(r.out, rank + ": in step, sum=1"));
      }
      if (flags.empty()) {
        CHECK(count(r.out, "mismatched collective calls: rank 1 (") == 2);
        CHECK(count(r.out, c.rank1) == 2);
        CHECK(count(r.out, std::string(")") + c.rank0 + " (every rank must make the same core calls") == 2);
      } else {
        CHECK(count(r.out, std::string("mismatched collective calls: rank 1") + c.rank1 + c.rank0 +
                               " (every rank must make the same core calls") == 2);
      }
      CHECK(nothing_left(tag));
    }
  }
}

TEST_CASE("a child forked after init fails its first collective at once; the parent's job completes") {
  for (const auto& flags : kTransports) {
    CAPTURE(flags.size());
    std::string tag;
    const ProcessResult r = run_mode("fork", flags, &tag);
    INFO(r.out, r.err);
    CHECK(r.exit_code == 0);
    for (const std::string rank : {"0", "1"}) {
      CHECK(contains(r.out, "rank " + rank + ": child: core allreduce: error (unsupported): rank " + rank + " ("));
      CHECK(contains(r.out, "allreduce: this process (pid "));
      CHECK(contains(r.out, ") was forked from rank " + rank + " (pid "));
      CHECK(contains(r.out, "rank " + rank +
                                ": child: engine allreduce: error (unsupported): allreduce_async: "
                                "this process (pid "));
      CHECK(contains(r.out, "collectives are unavailable in a forked child"));
      CHECK(contains(r.out, "rank " + rank + ": child exited 0"));
      CHECK(contains(r.out, "rank " + rank + ": in step, sum=1"));
      CHECK(contains(r.out, "rank " + rank + ": parent ok, engine sum=2"));
    }
    CHECK(count(r.out, "returned") == 0);
    CHECK(nothing_left(tag));
  }
}
