// trainrun --local run for real: results, exit codes and messages a user sees,
// and no process of the job left behind.
#include <doctest/doctest.h>

#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <string>

#include "tests/integration/process_runner.h"

using namespace trainrun::test;

namespace {

std::string trainrun_bin() { return program_path("TRAINRUN_BIN"); }
std::string rank_program() { return program_path("RANK_PROGRAM"); }

// Runs trainrun with a tag its ranks inherit; `tag` receives it.
ProcessResult run_trainrun(std::vector<std::string> args, std::string* tag = nullptr) {
  args.insert(args.begin(), trainrun_bin());
  ProcessOptions options;
  options.env.push_back(unique_tag());
  if (tag) *tag = options.env.back();
  return run_process(args, options);
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Leftover ranks carry the test's tag in their environment; none may survive.
void check_nothing_left(const std::string& tag) { CHECK(processes_with_env(tag).empty()); }

}  // namespace

TEST_CASE("a 4-rank job computes and exits 0") {
  std::string tag;
  const ProcessResult r = run_trainrun({"--local", "-np", "4", rank_program(), "allreduce"}, &tag);
  CHECK(r.exit_code == 0);
  CHECK(count(r.out, "sum=6") == 4);
  for (int rank = 0; rank < 4; ++rank) {
    CHECK(r.out.find("rank " + std::to_string(rank) + ": sum=6") != std::string::npos);
  }
  check_nothing_left(tag);
}

TEST_CASE("every rank gets the environment contract") {
  const ProcessResult r = run_trainrun({"--local", "-np", "2", rank_program(), "env:TRAINRUN_RANK",
                                    "env:TRAINRUN_LOCAL_SIZE", "env:HOROVOD_SIZE", "env:WORLD_SIZE",
                                    "env:MASTER_ADDR", "env:TRAINRUN_JOB_ID"});
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("rank 1: TRAINRUN_RANK=1") != std::string::npos);
  CHECK(r.out.find("rank 0: TRAINRUN_LOCAL_SIZE=2") != std::string::npos);
  CHECK(r.out.find("rank 1: HOROVOD_SIZE=2") != std::string::npos);
  CHECK(r.out.find("rank 0: WORLD_SIZE=2") != std::string::npos);
  CHECK(r.out.find("rank 0: MASTER_ADDR=127.0.0.1") != std::string::npos);
  CHECK(r.out.find("TRAINRUN_JOB_ID=<unset>") == std::string::npos);
}

TEST_CASE("the first failing rank's exit code ends the job and is named") {
  // Rank 2 fails at once; the others would sleep for a minute.
  std::string tag;
  const ProcessResult r = run_trainrun({"--local", "-np", "4", "--grace", "2", rank_program(), "exit:2:7",
                                    "sleep:60000"}, &tag);
  CHECK(r.exit_code == 7);
  CHECK(r.seconds < 10);
  CHECK(r.err.find("rank 2 (host ") != std::string::npos);
  CHECK(r.err.find("exited with code 7") != std::string::npos);
  // Ranks torn down by trainrun are not blamed.
  CHECK(r.err.find("rank 0 (host") == std::string::npos);
  check_nothing_left(tag);
}

TEST_CASE("a rank killed by a signal: 128+N and the signal's name") {
  std::string tag;
  const ProcessResult r = run_trainrun({"--local", "-np", "2", rank_program(), "raise:1:11", "sleep:60000"}, &tag);
  CHECK(r.exit_code == 139);
  CHECK(r.err.find("rank 1") != std::string::npos);
  CHECK(r.err.find("SIGSEGV") != std::string::npos);
  check_nothing_left(tag);
}

TEST_CASE("a missing or non-executable program is one clear error before anything starts") {
  const ProcessResult missing = run_trainrun({"--local", "-np", "2", "/nonexistent/prog"});
  CHECK(missing.exit_code == 127);
  CHECK(missing.err == "trainrun: error: no such file: /nonexistent/prog\n");
  const ProcessResult not_found = run_trainrun({"--local", "-np", "2", "no-such-program-xyz"});
  CHECK(not_found.exit_code == 127);
  CHECK(not_found.err.find("'no-such-program-xyz' not found in PATH") != std::string::npos);
  char path[] = "/tmp/trainrun-noexec-XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  ::close(fd);
  const ProcessResult not_exec = run_trainrun({"--local", "-np", "2", path});
  ::unlink(path);
  CHECK(not_exec.exit_code == 126);
  CHECK(not_exec.err == "trainrun: error: not executable: " + std::string(path) + "\n");
}

TEST_CASE("usage errors exit 2 with a message") {
  const ProcessResult zero = run_trainrun({"-np", "0", rank_program()});
  CHECK(zero.exit_code == 2);
  CHECK(zero.err.find("trainrun: error:") == 0);
  const ProcessResult none = run_trainrun({"-np", "2"});
  CHECK(none.exit_code == 2);
  CHECK(none.err.find("no program given") != std::string::npos);
  const ProcessResult unknown = run_trainrun({"--frobnicate", "-np", "2", rank_program()});
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.err.find("--frobnicate") != std::string::npos);
  const ProcessResult help = run_trainrun({"--help"});
  CHECK(help.exit_code == 0);
  CHECK(help.out.find("--np") != std::string::npos);
  const ProcessResult version = run_trainrun({"--version"});
  CHECK(version.exit_code == 0);
  CHECK(version.out.find("trainrun ") == 0);
}

TEST_CASE("Ctrl-C stops every rank and trainrun exits 130") {
  ProcessOptions options;
  options.env.push_back(unique_tag());
  const std::string tag = options.env.back();
  Child job({trainrun_bin(), "--local", "-np", "3", "--grace", "2", rank_program(), "init",
             "print:ready", "sleep:60000"},
            options);
  REQUIRE(job.wait_for_output("rank 2: ready", std::chrono::seconds(20)));
  job.signal(SIGINT);
  const ProcessResult r = job.wait();
  CHECK(r.exit_code == 130);
  CHECK(r.err.find("SIGINT") != std::string::npos);
  CHECK(r.seconds < 15);
  check_nothing_left(tag);
}

TEST_CASE("--check-build lists the gloo backend") {
  const ProcessResult r = run_trainrun({"--check-build"});
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("gloo") != std::string::npos);
}
