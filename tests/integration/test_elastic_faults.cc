// Elastic jobs whose failing worker does not die (issue 23, items 3 and 10):
// a worker stopped with SIGSTOP (alive, silent) is killed and named within
// --elastic-hang-timeout while the healthy ones re-form and finish; a
// discovery script that lowers a host's slots stops the workers beyond
// them; the engine's stall line tells "never started" from "stopped
// answering". Real processes, real signals; nothing left afterwards.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/integration/elastic_steps.h"
#include "tests/integration/trainrun_runner.h"

using namespace trainrun::test;
using Clock = std::chrono::steady_clock;
using std::chrono::seconds;

namespace {

std::string elastic_program() { return program_path("ELASTIC_PROGRAM"); }

Child start(std::vector<std::string> args, std::string* tag) {
  ProcessOptions options;
  options.env.push_back(unique_tag());
  options.timeout = std::chrono::minutes(5);
  *tag = options.env.back();
  args.insert(args.begin(), trainrun_bin());
  return Child(args, options);
}

// The pid of the process with `env` (e.g. "TRAINRUN_RANK=1") of the job tagged `tag`, or -1.
pid_t pid_with(const std::string& tag, const std::string& env) {
  const auto tagged = processes_with_env(tag);
  for (pid_t pid : processes_with_env(env)) {
    if (std::find(tagged.begin(), tagged.end(), pid) != tagged.end()) return pid;
  }
  return -1;
}

}  // namespace

TEST_CASE("a worker stopped with SIGSTOP is killed within --elastic-hang-timeout; the 2 healthy ones finish") {
  std::string tag;
  Child job = start({"--local", "-np", "3", "--min-np", "2", "--elastic-hang-timeout", "4", elastic_program(),
                     "--steps", "40", "--mb", "1", "--sleep-ms", "50"},
                    &tag);
  REQUIRE(job.wait_for_output("] step 5 size 3", std::chrono::minutes(2)));
  const pid_t stopped = worker_pid(tag, 1);
  REQUIRE(stopped > 0);
  ::kill(stopped, SIGSTOP);
  const auto at = Clock::now();
  REQUIRE(job.wait_for_output("made no progress", std::chrono::minutes(2)));
  const double took = std::chrono::duration<double>(Clock::now() - at).count();
  const ProcessResult r = job.wait();
  INFO(r.err);
  CHECK(r.exit_code == 0);
  // The documented bound: the timeout after its last heartbeat, plus a tick
  // and the settle time (generous: a loaded machine prints late).
  CHECK(took < 4 + 20);
  CHECK(count(r.err, "made no progress") == 1);
  CHECK(contains(r.err, "trainrun: elastic: worker 1 (host "));
  CHECK(contains(r.err,
                 "pid " + std::to_string(stopped) +
                     ") made no progress for 4 s (no heartbeat: stopped or "
                     "frozen; --elastic-hang-timeout), killed with SIGKILL; generation 1: 2 rank(s) on 1 host(s)"));
  CHECK(!contains(r.err, "blacklisted"));
  CHECK(count(r.out, "done at step 40 size 2") == 2);
  CHECK(!contains(r.out, "wrong result"));
  const std::vector<ElasticStep> steps = elastic_steps(r.out);
  REQUIRE(!steps.empty());
  CHECK(steps.back().step == 40);
  CHECK(steps.back().generation == 1);
  CHECK(::kill(stopped, 0) != 0);
  CHECK(nothing_left(tag, seconds(5)));
}

// A peer slower than the collective timeout, every process alive: the
// workers whose collective timed out leave their generation, go on beating
// (never "no heartbeat"), and once stuck for the hang timeout with every
// peer reachable, the launcher re-forms the same workers (issue 37, item 5).
TEST_CASE("a peer slower than the collective timeout: the same workers re-form and finish") {
  std::string tag;
  Child job = start({"--local", "-np", "2", "--min-np", "2", "--gloo-timeout-seconds", "2", "--elastic-hang-timeout",
                     "4", elastic_program(), "--steps", "20", "--mb", "1", "--pause-at", "5:1:12000"},
                    &tag);
  const ProcessResult r = job.wait();
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.err, "trainrun: elastic: worker 0 (host "));
  // Why it left, as the worker saw it: its collective timed out.
  CHECK(contains(r.err, ") left generation 0 ("));
  CHECK(contains(r.err, ": allreduce: no progress with rank 1 "));
  CHECK(contains(r.err, ") and reaches every peer: the same workers re-form; generation 1: 2 rank(s) on 1 host(s)"));
  CHECK(!contains(r.err, "no heartbeat"));
  CHECK(count(r.out, "done at step 20 size 2") == 2);
  CHECK(!contains(r.out, "wrong result"));
  const std::vector<ElasticStep> steps = elastic_steps(r.out);
  REQUIRE(!steps.empty());
  CHECK(steps.back().step == 20);
  CHECK(steps.back().generation >= 1);
  CHECK(nothing_left(tag, seconds(5)));
}

TEST_CASE("--elastic-hang-timeout below 2 s (4 heartbeats) is refused with one line; 0 turns it off") {
  const ProcessResult r =
      run_trainrun({"--local", "-np", "2", "--min-np", "1", "--elastic-hang-timeout", "0.5", "/bin/true"});
  CHECK(r.exit_code == 2);
  CHECK(r.err ==
        "trainrun: error: --elastic-hang-timeout 0.5: at least 2 s (workers beat every 0.5 s), or 0 to "
        "turn it off\n");
  const ProcessResult off = run_trainrun({"--local", "-np", "2", "--min-np", "1", "--elastic-hang-timeout", "0",
                                          elastic_program(), "--steps", "3", "--mb", "1"});
  CHECK(off.exit_code == 0);
}

TEST_CASE("a discovery script lowering a host's slots: the workers with the highest local ranks stop") {
  char dir_template[] = "/tmp/trainrun-elastic-faults-XXXXXX";
  REQUIRE(::mkdtemp(dir_template));
  const std::string dir = dir_template;
  const std::string script = dir + "/discover.sh";
  std::ofstream(script) << "#!/bin/sh\nexec cat " << dir << "/hosts\n";
  ::chmod(script.c_str(), 0755);
  std::ofstream(dir + "/hosts") << "localhost:4\n";
  std::string tag;
  Child job = start({"--host-discovery-script", script, "--min-np", "1", "--max-np", "4", elastic_program(), "--steps",
                     "60", "--mb", "1", "--sleep-ms", "50"},
                    &tag);
  REQUIRE(job.wait_for_output("] step 5 size 4", std::chrono::minutes(2)));
  std::ofstream(dir + "/hosts.new") << "localhost:2\n";
  std::rename((dir + "/hosts.new").c_str(), (dir + "/hosts").c_str());
  const ProcessResult r = job.wait();
  std::filesystem::remove_all(dir);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(count(r.err,
              "trainrun: elastic: the discovery script lowered localhost to 2 slot(s): worker(s) 3, 2 stop; "
              "generation 1: 2 rank(s) on 1 host(s)") == 1);
  CHECK(count(r.out, "done at step 60 size 2") == 2);
  CHECK(contains(r.out, "[0] worker 0: done at step 60 size 2"));
  CHECK(contains(r.out, "[1] worker 1: done at step 60 size 2"));
  CHECK(!contains(r.out, "wrong result"));
  CHECK(nothing_left(tag, seconds(5)));
}

// Every engine ran for many cycles, then one rank's process stopped: the
// others' stall line must not ask whether it ever started.
TEST_CASE("a stall after many steps says a rank stopped answering, not 'has one not made it?'") {
  std::string tag;
  Child job = start({"--local", "-np", "2", "--stall-warning", "0.5", elastic_program(), "--ops", "engine", "--steps",
                     "100000", "--mb", "1", "--sleep-ms", "10"},
                    &tag);
  REQUIRE(job.wait_for_output("] step 20 size 2", std::chrono::minutes(2)));
  const pid_t stopped = pid_with(tag, "TRAINRUN_RANK=1");
  REQUIRE(stopped > 0);
  ::kill(stopped, SIGSTOP);
  const bool warned = job.wait_for_output("for the other ranks' engines", std::chrono::minutes(2));
  ::kill(stopped, SIGKILL);
  const ProcessResult r = job.wait();
  INFO(r.err);
  REQUIRE(warned);
  CHECK(contains(r.err, "[0] trainrun: rank 0 ("));
  CHECK(contains(r.err, "): stall: the engine waited more than 0.5 s for the other ranks' engines, which answered "));
  CHECK(contains(r.err, " ago: one stopped answering (a stopped or hung process, or the network to it cut)\n"));
  CHECK(!contains(r.err, "has one not made it?"));
  CHECK(nothing_left(tag, seconds(5)));
}
