// Elastic jobs on one host, with real faults: kill -9 of a rank in the
// middle of 64 MiB allreduces, a rank exiting with an error, too few ranks
// left for longer than --elastic-timeout, more membership changes than
// --reset-limit, a discovery script failing on its first call. Each ends
// with the line a user needs and nothing left running.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <string>
#include <thread>

#include "tests/integration/elastic_checks.h"

using namespace trainrun::test;
using std::chrono::seconds;

namespace {

std::string elastic_program() { return program_path("ELASTIC_PROGRAM"); }

// Steps come in order with no gap: after a failure the job goes on from
// its last commit (at most one step is done again).
void check_continuous(const std::vector<ElasticStep>& steps, long long last) {
  REQUIRE(!steps.empty());
  for (std::size_t i = 1; i < steps.size(); ++i) {
    CHECK_MESSAGE(steps[i].step <= steps[i - 1].step + 1, "step " << steps[i].step << " after " << steps[i - 1].step);
    CHECK(steps[i].step >= steps[i - 1].step);
  }
  CHECK(steps.back().step == last);
}

// A 4-rank job of 64 MiB allreduces; worker `victim` is killed with
// SIGKILL once step 3 is done. Returns trainrun's result.
ProcessResult kill_one_of_four(int victim, std::string* tag) {
  ProcessOptions options;
  options.env.push_back(unique_tag());
  options.timeout = std::chrono::minutes(10);  // a step takes seconds under the thread sanitizer
  *tag = options.env.back();
  Child job({trainrun_bin(), "--local", "-np", "4", "--min-np", "2", elastic_program(), "--steps", "10", "--mb", "64"},
            options);
  REQUIRE(job.wait_for_output("] step 3 size 4", std::chrono::minutes(5)));
  const pid_t pid = worker_pid(*tag, victim);
  REQUIRE(pid > 0);
  ::kill(pid, SIGKILL);
  return job.wait();
}

void check_survived_kill(const ProcessResult& r, int victim) {
  check_survivors_finished(r, victim, 4, 10);
  CHECK(contains(r.err, "; generation 1: 3 rank(s) on 1 host(s)"));
  const std::vector<ElasticStep> steps = elastic_steps(r.out);
  check_continuous(steps, 10);
  CHECK(steps.back().generation == 1);
  CHECK(count(r.err, "joined generation 1 as rank") == 3);
}

}  // namespace

TEST_CASE("kill -9 of a rank mid-allreduce: the other 3 go on from the last commit with correct results") {
  std::string tag;
  const ProcessResult r = kill_one_of_four(2, &tag);
  check_survived_kill(r, 2);
  CHECK(nothing_left(tag));
}

TEST_CASE("kill -9 of rank 0: a survivor becomes rank 0 and the job finishes") {
  std::string tag;
  const ProcessResult r = kill_one_of_four(0, &tag);
  check_survived_kill(r, 0);
  CHECK(contains(r.err, "worker 1: joined generation 1 as rank 0 of 3"));
  CHECK(nothing_left(tag));
}

namespace {

// Worker 1 of 3 leaves with code 7 at step 4, the way `how` says; the
// other two must go on to step 8 without it. Returns trainrun's stderr.
std::string one_of_three_leaves(const std::vector<std::string>& how) {
  std::vector<std::string> args{"--local", "-np", "3", "--min-np", "1", elastic_program(), "--steps", "8", "--mb", "1"};
  args.insert(args.end(), how.begin(), how.end());
  std::string tag;
  const ProcessResult r = run_trainrun(args, &tag);
  CHECK_MESSAGE(r.exit_code == 0, r.err);
  CHECK(contains(r.err, "trainrun: elastic: worker 1 (host "));
  CHECK(contains(r.err, "exited with code 7; generation 1: 2 rank(s) on 1 host(s)"));
  check_continuous(elastic_steps(r.out), 8);
  CHECK(count(r.out, "done at step 8 size 2") == 2);
  CHECK(nothing_left(tag));
  return r.err;
}

}  // namespace

TEST_CASE("a rank exiting with an error: the job goes on without it and exits 0") {
  one_of_three_leaves({"--exit-at", "4:1:7"});
}

// The peers of a rank that shuts down learn it through the engine's
// negotiation, before its sockets close: that must re-form them too.
TEST_CASE("a rank leaving through shutdown() with an error: its peers' engine ops re-form instead of failing") {
  CHECK(!contains(one_of_three_leaves({"--ops", "engine", "--shutdown-at", "4:1:7"}), "the engine was shut down"));
}

// Its generation watcher is still polling the rendezvous while exit()
// runs: that must not crash it (OpenSSL's atexit cleanup did, in RAND_bytes).
TEST_CASE("a rank ending without shutdown(): it exits with its own code, the others go on") {
  CHECK(!contains(one_of_three_leaves({"--return-at", "4:1:7"}), "SIGSEGV"));
}

TEST_CASE("one host, --min-np 2: a failed worker is replaced there, and the job finishes") {
  // Was: the only host was never used again, and the job waited out --elastic-timeout (exit 125).
  std::string tag;
  const ProcessResult r =
      run_trainrun({"--local", "-np", "2", "--min-np", "2", "--elastic-timeout", "60", elastic_program(), "--steps",
                    "30", "--mb", "1", "--sleep-ms", "20", "--exit-at", "3:1:7"},
                   &tag);
  CHECK_MESSAGE(r.exit_code == 0, r.err);
  CHECK(contains(r.err, "exited with code 7; 1 new worker(s) on "));
  CHECK(contains(r.err, "; generation 1: 2 rank(s) on 1 host(s)\n"));
  check_continuous(elastic_steps(r.out), 30);
  CHECK(count(r.out, "done at step 30 size 2") == 2);
  CHECK(nothing_left(tag));
}

TEST_CASE("fewer ranks than --min-np for longer than --elastic-timeout: exit 125 naming required and available") {
  // The replacement fails too: two failures blacklist the only host.
  std::string tag;
  const ProcessResult r =
      run_trainrun({"--local", "-np", "2", "--min-np", "2", "--elastic-timeout", "2", elastic_program(), "--steps",
                    "1000", "--mb", "1", "--sleep-ms", "20", "--exit-at", "3:1:7", "--exit-at", "4:2:7"},
                   &tag);
  CHECK(r.exit_code == 125);
  CHECK(contains(r.err, "(2 failures; blacklisted until the job ends)"));
  CHECK(contains(r.err, "1 worker(s) left, --min-np 2 required: waiting up to 2 s for slots (--elastic-timeout)"));
  CHECK(
      contains(r.err, "trainrun: elastic: 1 slot(s) available, 2 required (--min-np); waited 2 s (--elastic-timeout)"));
  CHECK(nothing_left(tag));
}

TEST_CASE("more membership changes than --reset-limit: the job ends with the failure that exceeded it") {
  std::string tag;
  const ProcessResult r =
      run_trainrun({"--local", "-np", "4", "--min-np", "1", "--reset-limit", "1", elastic_program(), "--steps", "1000",
                    "--mb", "1", "--sleep-ms", "20", "--exit-at", "3:1:7", "--exit-at", "6:2:9"},
                   &tag);
  CHECK(r.exit_code == 9);
  CHECK(contains(r.err, "generation 1: 3 rank(s)"));
  CHECK(contains(r.err, "trainrun: elastic: reset limit 1 (--reset-limit) exceeded: worker 2 (host "));
  CHECK(contains(r.err, "exited with code 9"));
  CHECK(nothing_left(tag));
}

TEST_CASE("a discovery script failing on its first call: trainrun exits at once with its stderr") {
  char dir_template[] = "/tmp/trainrun-elastic-XXXXXX";
  REQUIRE(::mkdtemp(dir_template));
  const std::string script = std::string(dir_template) + "/discover.sh";
  std::ofstream(script) << "#!/bin/sh\necho 'cloud API: no credentials' >&2\nexit 3\n";
  ::chmod(script.c_str(), 0755);
  std::string tag;
  const ProcessResult r = run_trainrun({"--host-discovery-script", script, "--min-np", "2", elastic_program()}, &tag);
  CHECK(r.exit_code == 125);
  CHECK(contains(r.err, "cloud API: no credentials"));
  CHECK(contains(r.err, "trainrun: error: --host-discovery-script " + script + " exited with code 3"));
  CHECK(r.seconds < 30);
  CHECK(nothing_left(tag));
  ::unlink(script.c_str());
  ::rmdir(dir_template);
}

TEST_CASE("elastic flags: bad combinations are usage errors (exit 2)") {
  const ProcessResult both = run_trainrun({"--host-discovery-script", "/bin/true", "-H", "h1:2", "/bin/true"});
  CHECK(both.exit_code == 2);
  CHECK(contains(both.err, "--host-discovery-script lists the hosts: it cannot be used with -H"));
  const ProcessResult range = run_trainrun({"--local", "-np", "4", "--min-np", "5", "/bin/true"});
  CHECK(range.exit_code == 2);
  CHECK(contains(range.err, "-np 4 must lie between --min-np 5 and --max-np"));
  const ProcessResult mpirun = run_trainrun({"--launcher", "mpirun", "-np", "2", "--min-np", "1", "/bin/true"});
  CHECK(mpirun.exit_code == 2);
  CHECK(contains(mpirun.err, "need trainrun's own agents, not --launcher mpirun"));
  const ProcessResult help = run_trainrun({"--help"});
  for (const char* flag : {"--min-np", "--max-np", "--host-discovery-script", "--reset-limit", "--elastic-timeout",
                           "--blacklist-cooldown"}) {
    CHECK_MESSAGE(contains(help.out, flag), flag);
  }
}

TEST_CASE("a second rank killed while the survivors re-form: they leave that generation for the next at once") {
  ProcessOptions options;
  options.env.push_back(unique_tag());
  const std::string tag = options.env.back();
  Child job({trainrun_bin(), "--local", "-np", "4", "--min-np", "1", elastic_program(), "--steps", "12", "--mb", "16",
             "--exit-at", "3:1:7"},
            options);
  // Printed when generation 1 is published: the survivors are meeting in it.
  REQUIRE(job.wait_for_output("exited with code 7; generation 1", seconds(120)));
  const pid_t pid = worker_pid(tag, 2);
  REQUIRE(pid > 0);
  ::kill(pid, SIGKILL);
  const ProcessResult r = job.wait();
  CHECK_MESSAGE(r.exit_code == 0, r.err);
  CHECK(contains(r.err, "trainrun: elastic: worker 2 (host "));
  CHECK(contains(r.err, "generation 2: 2 rank(s) on 1 host(s)"));
  const std::vector<ElasticStep> steps = elastic_steps(r.out);
  check_continuous(steps, 12);
  CHECK(steps.back().size == 2);
  CHECK(count(r.out, "done at step 12 size 2") == 2);
  CHECK(r.seconds < 60);
  CHECK(nothing_left(tag));
}
