// Every rank's stack, for real: a deadlocked rank under --timeout, SIGQUIT
// to a running job (which goes on), Python ranks, and the core collectives'
// wait warning with --stacks-on-stall. What a user sees: the grouped dump,
// the exit code, the dump file, and that nothing of the job is left.
// Needs eu-stack (elfutils) and ptrace: exits 77 (skip) saying so otherwise.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

#include "tests/integration/trainrun_runner.h"

using namespace trainrun::test;
using std::chrono::seconds;

namespace {

// The dump's group headers without their hosts ("ranks 0-1,3", "rank 2"), in order.
std::vector<std::string> group_headers(const std::string& err) {
  std::vector<std::string> headers;
  std::stringstream lines(err);
  std::string line;
  while (std::getline(lines, line)) {
    const bool header = line.rfind("rank ", 0) == 0 || line.rfind("ranks ", 0) == 0;
    if (header && line.back() == ':' && line.find(" (") != std::string::npos) {
      headers.push_back(line.substr(0, line.find(" (")));
    }
  }
  return headers;
}

// The stack under the group header that starts with `ranks` ("rank 2"):
// its indented lines.
std::string group_text(const std::string& err, const std::string& ranks) {
  const std::size_t start = err.find("\n" + ranks + " (");
  if (start == std::string::npos) return "";
  std::stringstream lines(err.substr(err.find('\n', start + 1) + 1));
  std::string line, text;
  while (std::getline(lines, line) && line.rfind("  ", 0) == 0) text += line + "\n";
  return text;
}

}  // namespace

TEST_CASE("--timeout: a deadlocked rank's lock frame in a dump of 2 groups, soon, and nothing left") {
  char dir[] = "/tmp/trainrun-stacks-XXXXXX";
  REQUIRE(::mkdtemp(dir));
  std::string tag;
  const ProcessResult r = run_trainrun({"-np", "4", "--timeout", "10", "--grace", "1", "--output-filename", dir,
                                        rank_program(), "init", "deadlock:2", "allreduce"},
                                       &tag);
  INFO(r.out, r.err);
  CHECK(r.exit_code == 124);
  CHECK(contains(r.err, "trainrun: --timeout 10 s expired: taking the stack of every rank\n"));
  CHECK(contains(r.err, "trainrun: stacks of every rank (--timeout 10 s expired), 2 groups:\n"));
  const std::vector<std::string> headers = group_headers(r.err);
  CHECK(headers == std::vector<std::string>{"ranks 0-1,3", "rank 2"});
  const std::string locked = group_text(r.err, "rank 2");
  CHECK((contains(locked, "pthread_mutex_lock") || contains(locked, "__lll_lock_wait")));
  CHECK(contains(locked, "deadlock"));
  CHECK(contains(group_text(r.err, "ranks 0-1,3"), "trainrun::Communicator::allreduce"));
  CHECK(contains(r.err, "trainrun: full dump in " + std::string(dir) + "/stacks.1.txt\n"));
  const std::string file = read_file(std::string(dir) + "/stacks.1.txt");
  CHECK(contains(file, "\nrank 2 ("));
  CHECK(contains(file, "\n== rank 2 ("));  // then the raw eu-stack text, addresses and all
  CHECK(contains(file, "TID "));
  CHECK(contains(r.err, "trainrun: the job ran longer than --timeout 10 s"));
  CHECK(r.seconds < 60);
  CHECK(nothing_left(tag, seconds(5)));
  CHECK(std::system(("rm -rf " + std::string(dir)).c_str()) == 0);
}

TEST_CASE("SIGQUIT: a dump of the sleeping rank and the ranks waiting for it; the job goes on and exits 0") {
  ProcessOptions options;
  options.env.push_back(unique_tag());
  Child job({trainrun_bin(), "-np", "4", rank_program(), "init", "print:ready", "sleep:3:8000", "allreduce"}, options);
  for (int rank = 0; rank < 4; ++rank) {
    REQUIRE(job.wait_for_output("rank " + std::to_string(rank) + ": ready", seconds(30)));
  }
  ::usleep(300 * 1000);  // into the sleep and the allreduce
  job.signal(SIGQUIT);
  const ProcessResult r = job.wait();
  INFO(r.out, r.err);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.err, "trainrun: SIGQUIT: taking the stack of every rank\n"));
  CHECK(group_headers(r.err) == std::vector<std::string>{"ranks 0-2", "rank 3"});
  CHECK(contains(group_text(r.err, "rank 3"), "clock_nanosleep"));
  CHECK(contains(group_text(r.err, "ranks 0-2"), "ShmRounds::sleep_on"));  // one host: shared memory
  CHECK(count(r.out, ": sum=6\n") == 4);                                   // the job went on after the dump
  CHECK(nothing_left(options.env[0], seconds(5)));
}

TEST_CASE("Python ranks: the rank in time.sleep stands apart, with the interpreter's frames") {
  const char* pythonpath = std::getenv("PYTHONPATH");
  if (!pythonpath || !*pythonpath) {
    MESSAGE("skipped: the Python package is not built");
    return;
  }
  const std::string script =
      "import select, time, trainrun._core as t\n"
      "t.init()\n"
      "print('rank', t.rank(), 'ready', flush=True)\n"
      "if t.rank() == 1:\n"
      "    time.sleep(600)\n"
      "else:\n"
      "    select.select([], [], [], 600)\n";
  std::string tag;
  const ProcessResult r =
      run_trainrun({"-np", "3", "--timeout", "15", "--grace", "1", "/usr/bin/python3", "-c", script}, &tag);
  INFO(r.out, r.err);
  CHECK(r.exit_code == 124);
  CHECK(group_headers(r.err) == std::vector<std::string>{"ranks 0,2", "rank 1"});
  const std::string sleeping = group_text(r.err, "rank 1");
  CHECK(contains(sleeping, "clock_nanosleep"));
  CHECK(contains(sleeping, "_PyEval_EvalFrameDefault"));
  CHECK(contains(group_text(r.err, "ranks 0,2"), "select"));
  CHECK(nothing_left(tag, seconds(5)));
}

// Issue 37: the wait that times out says so once; no "still waiting" line
// for the moment it gives up.
TEST_CASE("a core allreduce that times out prints no 'still waiting' line as it fails") {
  std::string tag;
  const ProcessResult r = run_trainrun({"-np", "2", "--stall-warning", "1", "--gloo-timeout-seconds", "2",
                                        rank_program(), "init", "sleep:1:8000", "allreduce"},
                                       &tag);
  INFO(r.out, r.err);
  CHECK(r.exit_code != 0);
  CHECK(contains(r.err, "): waiting: allreduce (core call #2) has waited 1 s for rank 1 ("));
  CHECK(!contains(r.err, "has waited 2 s"));
  CHECK(count(r.err, "still waiting") == 1);
  CHECK(contains(r.err, "no progress with rank 1 "));
  CHECK(nothing_left(tag, seconds(5)));
}

TEST_CASE("a core allreduce whose peer is late says so after --stall-warning, naming it; --stacks-on-stall dumps") {
  std::string tag;
  const ProcessResult r = run_trainrun(
      {"-np", "2", "--stall-warning", "1", "--stacks-on-stall", rank_program(), "init", "sleep:1:5000", "allreduce"},
      &tag);
  INFO(r.out, r.err);
  CHECK(r.exit_code == 0);
  // init's barrier is core call #1; rank 0 waits in #2 for rank 1 on this host.
  CHECK(contains(r.err, "): waiting: allreduce (core call #2) has waited 1 s for rank 1 ("));
  CHECK(contains(r.err, "127.0.0.1); still waiting\n"));
  const int warnings = count(r.err, "[0] trainrun: rank 0 (");  // the view beside a dump repeats them untagged
  CHECK(warnings >= 2);                                         // once per interval, while the wait lasts (~5 s)
  CHECK(warnings <= 6);
  CHECK(count(r.err, "trainrun: a stall warning (--stacks-on-stall): taking the stack of every rank\n") >= 1);
  CHECK(contains(r.err, "trainrun: engine's view (the last stall line of each rank that printed one):\n"));
  CHECK(contains(group_text(r.err, "rank 1"), "clock_nanosleep"));
  CHECK(count(r.out, "sum=1\n") == 2);
  CHECK(nothing_left(tag, seconds(5)));
}

TEST_CASE("the engine's stall shutdown: the late rank's stack, taken while it still sleeps") {
  std::string tag;
  const ProcessResult r = run_trainrun({"-np", "2", "--stall-shutdown", "1.5", "--stall-warning", "0",
                                        program_path("ENGINE_PROGRAM"), "stall", "1", "6000", "fresh"},
                                       &tag);
  INFO(r.out, r.err);
  CHECK(r.exit_code == 3);
  CHECK(contains(r.err, "trainrun: rank 0 ("));
  CHECK(contains(r.err, "): stall: an op waited more than 1.5 s (TRAINRUN_STALL_SHUTDOWN), so the engine stopped"));
  CHECK(contains(r.err, "trainrun: the engine's stall shutdown: taking the stack of every rank\n"));
  CHECK(contains(group_text(r.err, "rank 1"), "clock_nanosleep"));
  CHECK(contains(r.err,
                 "): no stack: not taken: it reported the stall shutdown and is on its way out (its line is "
                 "below)\n"));  // rank 0, which is not stopped while it exits
  CHECK(group_text(r.err, "rank 0").empty());
  CHECK(count(r.err, "taking the stack of every rank") == 1);
  CHECK(nothing_left(tag, seconds(5)));
}

TEST_CASE("a host without eu-stack: one line for its ranks, and the job still ends on time") {
  ProcessOptions options;
  options.env.push_back("PATH=/nonexistent");  // the agent finds eu-stack through PATH
  std::string tag;
  const ProcessResult r = run_trainrun(
      {"-np", "2", "--timeout", "3", "--grace", "1", rank_program(), "init", "sleep:60000"}, &tag, options);
  INFO(r.out, r.err);
  CHECK(r.exit_code == 124);
  CHECK(contains(r.err, "trainrun: stacks of every rank (--timeout 3 s expired), 1 group:\nranks 0-1 ("));
  CHECK(contains(r.err,
                 "): no stack: eu-stack is not installed on this host (Debian/Ubuntu: apt-get install "
                 "elfutils)\n"));
  CHECK(nothing_left(tag, seconds(5)));
}

int main(int argc, char** argv) {
  if (::access("/usr/bin/eu-stack", X_OK) != 0) {
    std::cout << "SKIP: no /usr/bin/eu-stack (Debian/Ubuntu: apt-get install elfutils)\n";
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
