// trainrun run for real: results, exit codes and the one-line messages a user
// sees, signals, teardown and that nothing of a job outlives it.
#include <doctest/doctest.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <string>

#include "tests/integration/trainrun_runner.h"

using namespace trainrun::test;
using std::chrono::seconds;

TEST_CASE("a 4-rank job computes and exits 0, output tagged by rank") {
  std::string tag;
  const ProcessResult r = run_trainrun({"--local", "-np", "4", rank_program(), "allreduce"}, &tag);
  CHECK(r.exit_code == 0);
  for (int rank = 0; rank < 4; ++rank) {
    CHECK(contains(r.out, "[" + std::to_string(rank) + "] rank " + std::to_string(rank) + ": sum=6\n"));
  }
  CHECK(r.err.empty());  // the OMP_NUM_THREADS note is --verbose's
  CHECK(nothing_left(tag));
}

TEST_CASE("the OMP_NUM_THREADS=1 note: with --verbose only, once per job (restarts included)") {
  std::string tag;
  const ProcessResult r =
      run_trainrun({"--verbose", "--max-restarts", "1", "--grace", "1", "-np", "2", rank_program(), "exit:1:3"}, &tag);
  INFO(r.err);
  CHECK(r.exit_code == 3);
  CHECK(count(r.err, "restarting the job (restart 1 of 1)") == 1);
  CHECK(count(r.err, kOmpNote) == 1);
  CHECK(nothing_left(tag));
}

TEST_CASE("every rank gets the environment contract, -x forwards only what is named") {
  ProcessOptions options;
  options.env = {"TRAINRUN_TEST_FORWARD=forwarded-value"};
  const ProcessResult r =
      run_trainrun({"-np", "2", "-x", "TRAINRUN_TEST_FORWARD", "-x", "TRAINRUN_TEST_SET=a b", rank_program(),
                    "env:TRAINRUN_RANK", "env:TRAINRUN_LOCAL_SIZE", "env:HOROVOD_SIZE", "env:WORLD_SIZE",
                    "env:MASTER_ADDR", "env:TRAINRUN_TEST_FORWARD", "env:TRAINRUN_TEST_SET"},
                   nullptr, options);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.out, "rank 1: TRAINRUN_RANK=1"));
  CHECK(contains(r.out, "rank 0: TRAINRUN_LOCAL_SIZE=2"));
  CHECK(contains(r.out, "rank 1: HOROVOD_SIZE=2"));
  CHECK(contains(r.out, "rank 0: WORLD_SIZE=2"));
  CHECK(contains(r.out, "rank 0: MASTER_ADDR=127.0.0.1"));
  CHECK(contains(r.out, "rank 1: TRAINRUN_TEST_FORWARD=forwarded-value"));
  CHECK(contains(r.out, "rank 0: TRAINRUN_TEST_SET=a b"));
  const ProcessResult unset = run_trainrun({"-np", "1", "-x", "TRAINRUN_TEST_NOT_SET", rank_program()});
  CHECK(unset.exit_code == 2);
  CHECK(contains(unset.err, "-x TRAINRUN_TEST_NOT_SET: TRAINRUN_TEST_NOT_SET is not set"));
}

TEST_CASE("engine flags reach every rank as the library's variables") {
  const ProcessResult r = run_trainrun(
      {"-np", "2", "--fusion-threshold-mb", "16", "--cycle-time-ms", "0.5", "--cache-capacity", "64", "--stall-warning",
       "5", "--stall-shutdown", "20", rank_program(), "env:TRAINRUN_FUSION_THRESHOLD", "env:TRAINRUN_CYCLE_TIME_MS",
       "env:TRAINRUN_CACHE_CAPACITY", "env:TRAINRUN_STALL_WARNING", "env:TRAINRUN_STALL_SHUTDOWN"});
  CHECK(r.exit_code == 0);
  for (const char* rank : {"0", "1"}) {
    const std::string prefix = std::string("rank ") + rank + ": ";
    CHECK(contains(r.out, prefix + "TRAINRUN_FUSION_THRESHOLD=16777216"));
    CHECK(contains(r.out, prefix + "TRAINRUN_CYCLE_TIME_MS=0.5"));
    CHECK(contains(r.out, prefix + "TRAINRUN_CACHE_CAPACITY=64"));
    CHECK(contains(r.out, prefix + "TRAINRUN_STALL_WARNING=5"));
    CHECK(contains(r.out, prefix + "TRAINRUN_STALL_SHUTDOWN=20"));
  }
  const ProcessResult bad = run_trainrun({"-np", "1", "--cycle-time-ms", "0", rank_program()});
  CHECK(bad.exit_code == 2);
  CHECK(contains(bad.err, "--cycle-time-ms"));
}

TEST_CASE("rank 3 of 4 exits 7: trainrun exits 7 within 1 s + grace and names it") {
  std::string tag;
  const ProcessResult r = run_trainrun({"-np", "4", "--grace", "2", rank_program(), "exit:3:7", "sleep:60000"}, &tag);
  CHECK(r.exit_code == 7);
  CHECK(r.seconds < 1 + 2 + 1);
  CHECK(contains(r.err, "trainrun: job failed: rank 3 (host "));
  CHECK(contains(r.err, "exited with code 7\n"));
  // Ranks torn down by trainrun are never the cause.
  for (int rank : {0, 1, 2}) CHECK_FALSE(contains(r.err, "rank " + std::to_string(rank) + " (host"));
  CHECK(nothing_left(tag));
}

TEST_CASE("a rank killed by SIGSEGV: exit 139 and the signal named") {
  std::string tag;
  const ProcessResult r = run_trainrun({"-np", "2", rank_program(), "raise:1:11", "sleep:60000"}, &tag);
  CHECK(r.exit_code == 139);
  CHECK(contains(r.err, "rank 1 (host "));
  CHECK(contains(r.err, "was killed by SIGSEGV"));
  CHECK(nothing_left(tag));
}

TEST_CASE("a rank killed by SIGKILL gets an out-of-memory hint") {
  const ProcessResult r = run_trainrun({"-np", "2", rank_program(), "raise:0:9", "sleep:60000"});
  CHECK(r.exit_code == 137);
  CHECK(contains(r.err, "was killed by SIGKILL (out of memory? check dmesg on "));
}

TEST_CASE("a rank that ignores SIGTERM is SIGKILLed after the grace period") {
  std::string tag;
  const ProcessResult r = run_trainrun(
      {"-np", "2", "--grace", "1", rank_program(), "ignore-term", "init", "exit:1:3", "sleep:60000"}, &tag);
  CHECK(r.exit_code == 3);
  CHECK(r.seconds >= 0.9);
  CHECK(r.seconds < 5);
  CHECK(nothing_left(tag));
}

TEST_CASE("children, grandchildren and a setsid escapee are gone when the job ends") {
  std::string tag;
  SUBCASE("after a clean exit") {
    const ProcessResult r = run_trainrun({"-np", "2", "--grace", "1", rank_program(), "spawn-tree"}, &tag);
    CHECK(r.exit_code == 0);
  }
  SUBCASE("after a failure") {
    const ProcessResult r =
        run_trainrun({"-np", "2", "--grace", "1", rank_program(), "spawn-tree", "exit:1:5", "sleep:60000"}, &tag);
    CHECK(r.exit_code == 5);
  }
  CHECK(nothing_left(tag, seconds(2)));
}

TEST_CASE("kill -9 of trainrun: every rank and its children are gone within grace + 2 s") {
  ProcessOptions options;
  options.env.push_back(unique_tag());
  const std::string tag = options.env.back();
  Child job({trainrun_bin(), "-np", "3", "--grace", "1", rank_program(), "spawn-tree", "print:ready", "sleep:60000"},
            options);
  REQUIRE(job.wait_for_output("rank 2: ready", seconds(20)));
  // Each rank, its child, grandchild and escapee (plus trainrun and its agent).
  // Up to 20 s: the grandchildren start late on a loaded machine (CI, sanitizers).
  for (int i = 0; i < 1000 && processes_with_env(tag).size() < 3 * 4 + 2; ++i) ::usleep(20'000);
  REQUIRE(processes_with_env(tag).size() >= 3 * 4 + 2);
  job.signal(SIGKILL);
  job.wait();
  CHECK(nothing_left(tag, seconds(1 + 2)));
}

TEST_CASE("SIGINT, SIGTERM or SIGHUP stop every rank: exit 130, 143, 129") {
  struct Case {
    int sig;
    bool whole_group;
    int code;
    const char* name;
  };
  for (const Case& c : {Case{SIGINT, false, 130, "SIGINT"}, Case{SIGINT, true, 130, "SIGINT"},
                        Case{SIGTERM, false, 143, "SIGTERM"}, Case{SIGHUP, false, 129, "SIGHUP"}}) {
    CAPTURE(c.name);
    CAPTURE(c.whole_group);
    ProcessOptions options;
    options.env.push_back(unique_tag());
    const std::string tag = options.env.back();
    Child job({trainrun_bin(), "-np", "3", "--grace", "2", rank_program(), "init", "print:ready", "sleep:60000"},
              options);
    REQUIRE(job.wait_for_output("rank 2: ready", seconds(20)));
    if (c.whole_group) job.signal_group(c.sig);
    else job.signal(c.sig);
    const ProcessResult r = job.wait();
    CHECK(r.exit_code == c.code);
    CHECK(contains(r.err, "trainrun: received " + std::string(c.name) + ", stopping the job"));
    CHECK(contains(r.err, "trainrun: stopped by " + std::string(c.name)));
    CHECK(r.seconds < 15);
    CHECK(nothing_left(tag));
  }
}

TEST_CASE("a second Ctrl-C kills at once, without waiting for the grace period") {
  ProcessOptions options;
  options.env.push_back(unique_tag());
  const std::string tag = options.env.back();
  Child job({trainrun_bin(), "-np", "2", "--grace", "30", rank_program(), "ignore-term", "print:ready", "sleep:60000"},
            options);
  REQUIRE(job.wait_for_output("rank 1: ready", seconds(20)));
  job.signal(SIGINT);
  REQUIRE(job.wait_for_output("stopping the job", seconds(5)));
  job.signal(SIGINT);
  const ProcessResult r = job.wait();
  CHECK(r.exit_code == 130);
  CHECK(r.seconds < 10);
  CHECK(contains(r.err, "again, killing the job"));
  CHECK(nothing_left(tag));
}

TEST_CASE("SIGUSR1 reaches every rank and the job goes on") {
  Child job({trainrun_bin(), "-np", "2", rank_program(), "usr1"}, ProcessOptions{});
  REQUIRE(job.wait_for_output("rank 1: waiting for SIGUSR1", seconds(20)));
  REQUIRE(job.wait_for_output("rank 0: waiting for SIGUSR1", seconds(5)));
  job.signal(SIGUSR1);
  const ProcessResult r = job.wait();
  CHECK(r.exit_code == 0);
  CHECK(contains(r.out, "rank 0: got SIGUSR1"));
  CHECK(contains(r.out, "rank 1: got SIGUSR1"));
}

TEST_CASE("--timeout: teardown, a message, exit 124") {
  std::string tag;
  const ProcessResult r =
      run_trainrun({"-np", "2", "--timeout", "1", "--grace", "1", rank_program(), "sleep:60000"}, &tag);
  CHECK(r.exit_code == 124);
  CHECK(contains(r.err, "trainrun: the job ran longer than --timeout 1 s"));
  CHECK(r.seconds < 6);
  CHECK(nothing_left(tag));
}

TEST_CASE("a rank that never reaches the rendezvous: the start-timeout error names it and its host") {
  std::string tag;
  const ProcessResult r =
      run_trainrun({"-np", "3", "--start-timeout", "2", "--grace", "1", rank_program(), "sleep:2:60000", "init"}, &tag);
  CHECK(r.exit_code == 125);
  CHECK(contains(r.err, "trainrun: rank 2 (host "));
  CHECK(contains(r.err, ") did not reach the rendezvous within 2 s (--start-timeout)"));
  CHECK(r.seconds < 10);
  CHECK(nothing_left(tag));
}

// Issue 37: the others wait in init for a rank that is gone; the summary
// named rank 0 (which aborted at its own rendezvous timeout), never rank 1.
TEST_CASE("a rank that exits 0 without calling init: the start-timeout error names it, not the ranks waiting") {
  std::string tag;
  const ProcessResult r =
      run_trainrun({"-np", "2", "--start-timeout", "2", "--grace", "1", rank_program(), "exit:1:0", "init"}, &tag);
  CHECK(r.exit_code == 125);
  CHECK(contains(r.err, "trainrun: rank 1 (host "));
  CHECK(contains(r.err,
                 ") exited with code 0 without calling init, and the other ranks wait for it (--start-timeout "
                 "2 s)"));
  CHECK(!contains(r.err, "rank 0 (host"));
  CHECK(r.seconds < 10);
  CHECK(nothing_left(tag));
}

TEST_CASE("a missing or non-executable program is one clear error before anything starts") {
  const ProcessResult missing = run_trainrun({"-np", "2", "/nonexistent/prog"});
  CHECK(missing.exit_code == 127);
  CHECK(missing.err == "trainrun: error: no such file: /nonexistent/prog\n");
  const ProcessResult not_found = run_trainrun({"-np", "2", "no-such-program-xyz"});
  CHECK(not_found.exit_code == 127);
  CHECK(contains(not_found.err, "'no-such-program-xyz' not found in PATH"));
  char path[] = "/tmp/trainrun-noexec-XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  ::close(fd);
  const ProcessResult not_exec = run_trainrun({"-np", "2", path});
  ::unlink(path);
  CHECK(not_exec.exit_code == 126);
  CHECK(not_exec.err == "trainrun: error: not executable: " + std::string(path) + "\n");
}

TEST_CASE("usage errors exit 2 with one line naming the bad token; nothing starts") {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"-np", "0", "p"}, "--np: '0' is not a number of ranks"},
      {{"-np", "2"}, "no program given"},
      {{"--frobnicate", "-np", "2", "p"}, "--frobnicate"},
      {{"-np", "5", "-H", "localhost:2,127.0.0.1:2", "p"},
       "-np 5 exceeds the 4 slot(s) of localhost:2,127.0.0.1:2 (--oversubscribe allows it)"},
      {{"-H", "localhost:x", "p"}, "-H: host 1 'localhost:x': slots must be an integer"},
      {{"-H", "localhost,bad host", "p"}, "-H: host 2 'bad host': host name contains whitespace"},
      {{"-H", "localhost,,x", "p"}, "-H: host 2 '': empty host name"},
      {{"-H", "a:1", "--hostfile", "f", "p"}, "-H and --hostfile cannot be used together"},
      {{"--hostfile", "/nonexistent/hosts", "p"}, "--hostfile /nonexistent/hosts: No such file or directory"},
      {{"-np", "2", "--rank-filter", "0,5", "p"}, "--rank-filter: rank 5 is not below -np 2"},
      {{"-np", "2", "--rank-filter", "x", "p"}, "--rank-filter: 'x' is not a rank"},
      {{"-np", "1", "-x", "1BAD", "p"}, "-x 1BAD: '1BAD' is not a variable name"},
      {{"--local", "-H", "localhost", "p"}, "--local runs every rank here"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.message);
    std::string tag;
    const ProcessResult r = run_trainrun(c.args, &tag);
    CHECK(r.exit_code == 2);
    CHECK(contains(r.err, c.message));
    CHECK(r.err.rfind("trainrun: error: ", 0) == 0);
    CHECK(r.out.empty());
    CHECK(processes_with_env(tag).empty());
  }
}

TEST_CASE("hostfile: comments, blank lines, CRLF and both slot spellings") {
  char path[] = "/tmp/trainrun-hosts-XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  const std::string content = "# test hosts\r\n\r\nlocalhost slots=2   # two here\r\n127.0.0.1:1\n";
  REQUIRE(::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size()));
  ::close(fd);
  const ProcessResult r = run_trainrun({"--hostfile", path, rank_program(), "allreduce"});
  const ProcessResult bad_file = [&] {
    std::string bad = std::string(path) + ".bad";
    FILE* f = std::fopen(bad.c_str(), "w");
    std::fputs("localhost slots=2\nh2 slots=zero\n", f);
    std::fclose(f);
    auto result = run_trainrun({"--hostfile", bad, rank_program()});
    ::unlink(bad.c_str());
    return result;
  }();
  ::unlink(path);
  CHECK(r.exit_code == 0);
  CHECK(count(r.out, "sum=3") == 3);
  CHECK(bad_file.exit_code == 2);
  CHECK(contains(bad_file.err, ".bad:2: 'slots=zero': slots must be an integer"));
}

TEST_CASE("--dry-run prints the rank map and each command, without the secret, and starts nothing") {
  std::string tag;
  const ProcessResult r =
      run_trainrun({"--dry-run", "-H", "localhost:2,127.0.0.1:2", "-np", "3", rank_program(), "a b", "it's"}, &tag);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.out, "rank  host              local  cross  command"));
  CHECK(contains(r.out, "   2  127.0.0.1          0/1    1/2"));
  CHECK(contains(r.out, "TRAINRUN_RANK=1 "));
  CHECK(contains(r.out, "'TRAINRUN_SECRET=<secret>'"));
  CHECK(contains(r.out, " 'a b' 'it'\\''s'\n"));
  CHECK(processes_with_env(tag).empty());
}

TEST_CASE("--help lists every option group; --version and --check-build answer") {
  const ProcessResult help = run_trainrun({"--help"});
  CHECK(help.exit_code == 0);
  for (const char* option : {"--np",
                             "--local",
                             "--hosts",
                             "--hostfile",
                             "--env",
                             "--backend",
                             "--output-filename",
                             "--tag-output",
                             "--rank-filter",
                             "--start-timeout",
                             "--timeout",
                             "--grace",
                             "--verbose",
                             "--dry-run",
                             "--check-build",
                             "--version",
                             "--launcher",
                             "--mpi-args",
                             "--fusion-threshold-mb",
                             "--cycle-time-ms",
                             "--cache-capacity",
                             "--timeline",
                             "--stall-warning",
                             "--stall-shutdown"}) {
    CHECK_MESSAGE(contains(help.out, option), option);
  }
  const ProcessResult version = run_trainrun({"--version"});
  CHECK(version.exit_code == 0);
  CHECK(version.out.rfind("trainrun ", 0) == 0);
  const ProcessResult build = run_trainrun({"--check-build"});
  CHECK(build.exit_code == 0);
  CHECK(contains(build.out, "tcp"));
  CHECK(build.out.find('\0') == std::string::npos);  // Open MPI's version string once carried its NUL
  if (contains(build.out, "\nmpi\t")) CHECK(contains(build.out, "MPI v"));  // from the library, opened to ask
}

// Every host starts an agent (the same binary) for every job: what it loads
// is start-up time, and it needs nothing of MPI (only --check-build asks MPI
// for its version, opening the library then).
TEST_CASE("the launcher and its agent map no MPI library") {
  ProcessOptions options;
  options.env.push_back(unique_tag());
  const std::string tag = options.env.back();
  Child job({trainrun_bin(), "-np", "1", rank_program(), "print:ready", "sleep:60000"}, options);
  REQUIRE(job.wait_for_output("rank 0: ready", seconds(20)));
  char own[4096] = {};
  REQUIRE(::realpath(trainrun_bin().c_str(), own));
  int launchers = 0;
  for (pid_t pid : processes_with_env(tag)) {
    char exe[4096] = {};
    if (::readlink(("/proc/" + std::to_string(pid) + "/exe").c_str(), exe, sizeof exe - 1) <= 0) continue;
    if (std::string(exe) != own) continue;  // the rank
    ++launchers;
    CAPTURE(pid);
    CHECK_FALSE(contains(read_file("/proc/" + std::to_string(pid) + "/maps"), "libmpi"));
  }
  CHECK(launchers == 2);  // trainrun and its agent
  job.signal(SIGTERM);
  job.wait();
  CHECK(nothing_left(tag, seconds(5)));
}
