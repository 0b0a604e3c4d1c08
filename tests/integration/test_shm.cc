// The shared-memory transport of ranks on one host, run for real: on by
// default, off with --no-shm or TRAINRUN_SHM=0, a rank killed in the middle
// of an allreduce makes its peers fail at once naming it (never a hang),
// kill -9 of trainrun leaves no process, and nothing ever appears in
// /dev/shm (the segment is a memfd, backends/shm/shm_segment.h).
#include <dirent.h>
#include <doctest/doctest.h>
#include <unistd.h>

#include <csignal>
#include <set>
#include <string>

#include "tests/integration/trainrun_runner.h"

using namespace trainrun::test;
using std::chrono::seconds;

namespace {

// Entries of /dev/shm that name trainrun (whoever made them).
std::set<std::string> trainrun_shm_entries() {
  std::set<std::string> names;
  if (DIR* dir = ::opendir("/dev/shm")) {
    while (const dirent* entry = ::readdir(dir)) {
      const std::string name = entry->d_name;
      if (name.find("trainrun") != std::string::npos) names.insert(name);
    }
    ::closedir(dir);
  }
  return names;
}

// Steps that keep every rank in large allreduces for a while.
std::vector<std::string> allreduce_loop(std::vector<std::string> args, int rounds) {
  for (int i = 0; i < rounds; ++i) args.push_back("allreduce-big:8");
  return args;
}

}  // namespace

TEST_CASE("ranks on one host share memory by default; --no-shm and TRAINRUN_SHM=0 turn it off") {
  const auto before = trainrun_shm_entries();
  std::string tag;
  const ProcessResult on =
      run_trainrun({"-np", "2", "--verbose", rank_program(), "init", "shm-mapped", "allreduce"}, &tag);
  CHECK(on.exit_code == 0);
  CHECK(contains(on.out, "rank 0: shm mapped: yes"));
  CHECK(contains(on.out, "rank 1: shm mapped: yes"));
  CHECK(contains(on.out, "rank 1: sum=1"));
  CHECK(contains(on.err, "trainrun: collectives (tcp): shared memory among the 2 ranks on "));
  CHECK(nothing_left(tag));

  const ProcessResult flag =
      run_trainrun({"-np", "2", "--no-shm", "--verbose", rank_program(), "init", "shm-mapped", "allreduce"});
  CHECK(flag.exit_code == 0);
  CHECK(contains(flag.out, "rank 0: shm mapped: no"));
  CHECK(contains(flag.out, "rank 1: sum=1"));
  CHECK(contains(flag.err, "trainrun: collectives (tcp): TCP mesh between every pair of ranks (--no-shm)"));

  ProcessOptions off;
  off.env = {"TRAINRUN_SHM=0"};
  const ProcessResult env = run_trainrun({"-np", "2", rank_program(), "init", "shm-mapped"}, nullptr, off);
  CHECK(env.exit_code == 0);
  CHECK(contains(env.out, "rank 1: shm mapped: no"));

  const ProcessResult forwarded = run_trainrun({"-np", "1", "--no-shm", "-x", "TRAINRUN_SHM=1", rank_program()});
  CHECK(forwarded.exit_code == 2);
  CHECK(contains(forwarded.err, "use --no-shm"));
  CHECK(trainrun_shm_entries() == before);
}

TEST_CASE("--help documents --no-shm; --check-build and --dry-run say which transport the ranks take") {
  const ProcessResult help = run_trainrun({"--help"});
  CHECK(help.exit_code == 0);
  CHECK(contains(help.out, "--no-shm"));
  const ProcessResult build = run_trainrun({"--check-build"});
  CHECK(build.exit_code == 0);
  CHECK(contains(build.out, "shared memory among ranks on one host unless TRAINRUN_SHM=0"));
  const ProcessResult dry = run_trainrun({"--dry-run", "-np", "3", rank_program()});
  CHECK(dry.exit_code == 0);
  CHECK(contains(dry.out, "trainrun: collectives (tcp): shared memory among the 3 ranks on "));
  CHECK(contains(dry.out, "TRAINRUN_SHM") == false);
  const ProcessResult dry_off = run_trainrun({"--dry-run", "-np", "3", "--no-shm", rank_program()});
  CHECK(contains(dry_off.out, "TRAINRUN_SHM=0"));
  CHECK(contains(dry_off.out, "TCP mesh between every pair of ranks (--no-shm)"));
}

TEST_CASE("a rank killed mid-allreduce: its peers fail at once naming it, exit 137, nothing left") {
  // Ordinary memory (the copy path) and allocate_memory's (read in place).
  for (const char* allreduce : {"allreduce-big:16", "allreduce-heap:16"}) {
    CAPTURE(allreduce);
    const auto before = trainrun_shm_entries();
    std::string tag;
    ProcessOptions options;
    options.env = {"TRAINRUN_COLLECTIVE_TIMEOUT=300"};
    // The survivors ignore trainrun's SIGTERM: only their own error may end
    // them before the 30 s grace, so the job ends early only if they noticed.
    const ProcessResult r = run_trainrun(
        {"-np", "3", "--grace", "30", rank_program(), "ignore-term", "init", "sleep:1:300", "raise:1:9", allreduce},
        &tag, options);
    CHECK(r.exit_code == 137);
    CHECK(contains(r.err, "rank 1 (host "));
    CHECK(contains(r.err, "was killed by SIGKILL"));
    for (int rank : {0, 2}) {
      const std::string prefix =
          "rank " + std::to_string(rank) + ": allreduce error: rank " + std::to_string(rank) + " (";
      CHECK_MESSAGE(contains(r.out, prefix), r.out);
    }
    CHECK(count(r.out, "connection to rank 1 (") == 2);
    CHECK(count(r.out, "closed (did that rank exit?)") == 2);
    CHECK(r.seconds < 25);
    CHECK(nothing_left(tag));
    CHECK(trainrun_shm_entries() == before);
  }
}

TEST_CASE("kill -9 of trainrun during shared-memory allreduces: no process, nothing in /dev/shm") {
  const auto before = trainrun_shm_entries();
  ProcessOptions options;
  options.env.push_back(unique_tag());
  const std::string tag = options.env.back();
  Child job(allreduce_loop({trainrun_bin(), "-np", "4", "--grace", "1", rank_program(), "init", "print:ready"}, 500),
            options);
  REQUIRE(job.wait_for_output("rank 3: ready", seconds(30)));
  ::usleep(300'000);  // inside the allreduces
  job.signal(SIGKILL);
  job.wait();
  CHECK(nothing_left(tag, seconds(1 + 2)));
  CHECK(trainrun_shm_entries() == before);
}

TEST_CASE("4 ranks on fewer CPUs (oversubscribed) finish their allreduces") {
  std::string tag;
  const ProcessResult r = run_trainrun(allreduce_loop({"-np", "4", rank_program(), "init"}, 20), &tag);
  CHECK(r.exit_code == 0);
  CHECK(count(r.out, "allreduce-big ok") == 4 * 20);
  CHECK(nothing_left(tag));
}
