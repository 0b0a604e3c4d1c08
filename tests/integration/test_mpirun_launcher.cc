// Running on Open MPI for real: `trainrun --launcher mpirun` and plain
// `mpirun` with no trainrun at all. Results, exit codes, messages and no
// process of the job left behind. Exits 77 (skip) when mpirun is missing.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <set>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "cli/plan/program_path.h"
#include "tests/integration/mpi_leftovers.h"
#include "tests/integration/process_runner.h"

using namespace trainrun::test;

namespace {

std::string g_mpirun;

std::string trainrun_bin() { return program_path("TRAINRUN_BIN"); }
std::string rank_program() { return program_path("RANK_PROGRAM"); }

ProcessOptions tagged(std::string* tag) {
  ProcessOptions options;
  options.env.push_back(unique_tag());
  if (tag) *tag = options.env.back();
  return options;
}

ProcessResult run_trainrun(std::vector<std::string> args, std::string* tag = nullptr) {
  args.insert(args.begin(), trainrun_bin());
  return run_process(args, tagged(tag));
}

// Plain mpirun as a user (or CI, as root) would type it.
ProcessResult run_plain_mpirun(std::vector<std::string> args, std::vector<std::string> env = {},
                               std::string* tag = nullptr) {
  args.insert(args.begin(), {g_mpirun, "--oversubscribe"});
  ProcessOptions options = tagged(tag);
  options.env.insert(options.env.end(), {"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"});
  options.env.insert(options.env.end(), env.begin(), env.end());
  return run_process(args, options);
}

bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// mpirun reaps its ranks a moment after it exits; give them that moment.
void check_nothing_left(const std::string& tag) {
  for (int i = 0; i < 50 && !processes_with_env(tag).empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  CHECK(processes_with_env(tag).empty());
}

}  // namespace

TEST_CASE("--launcher mpirun: a 4-rank job computes, tags its output and exits 0") {
  std::string tag;
  const ProcessResult r = run_trainrun({"--launcher", "mpirun", "-np", "4", rank_program(), "allreduce"}, &tag);
  CHECK(r.exit_code == 0);
  CHECK(count(r.out, "sum=6") == 4);
  for (int rank = 0; rank < 4; ++rank) {
    const std::string n = std::to_string(rank);
    CHECK(contains(r.out, "[" + n + "] rank " + n + ": sum=6\n"));  // trainrun's tags (test_mpirun_output.cc)
  }
  check_nothing_left(tag);
}

TEST_CASE("--mpi --no-tag-output: the MPI backend and MPI's view of the node") {
  const ProcessResult r = run_trainrun({"--mpi", "--no-tag-output", "-np", "3", rank_program(), "topology"});
  CHECK(r.exit_code == 0);
  for (int rank = 0; rank < 3; ++rank) {
    CHECK(contains(r.out, "rank " + std::to_string(rank) + ": backend=mpi size=3 local=" + std::to_string(rank) +
                              "/3 cross=0/1\n"));
  }
  CHECK_FALSE(contains(r.out, "<stdout>"));
}

TEST_CASE("plain mpirun, no trainrun: the library finds Open MPI and uses the mpi backend") {
  const ProcessResult r = run_plain_mpirun({"-np", "2", rank_program(), "topology", "allreduce"});
  CHECK(r.exit_code == 0);
  CHECK(contains(r.out, "rank 0: backend=mpi size=2 local=0/2 cross=0/1"));
  CHECK(contains(r.out, "rank 1: backend=mpi size=2 local=1/2 cross=0/1"));
  CHECK(count(r.out, "sum=1") == 2);
}

TEST_CASE("TRAINRUN_BACKEND overrides detection under plain mpirun") {
  const ProcessResult r = run_plain_mpirun({"-np", "2", rank_program(), "topology"}, {"TRAINRUN_BACKEND=gloo"});
  CHECK(r.exit_code != 0);
  CHECK(contains(r.err, "init: the tcp backend needs a rendezvous"));
}

TEST_CASE("a count MPI cannot express is an error naming it, and the job goes on") {
  const ProcessResult r =
      run_trainrun({"--mpi", "--no-tag-output", "-np", "2", rank_program(), "hugecount", "allreduce"});
  CHECK(r.exit_code == 0);
  for (const char* rank : {"0", "1"}) {
    CHECK(contains(r.out, std::string("rank ") + rank + ": error: rank " + rank + " ("));
  }
  CHECK(count(r.out, "): allreduce: count 2147483648 exceeds MPI's limit of 2147483647 elements\n") == 2);
  CHECK(count(r.out, "sum=1") == 2);
}

TEST_CASE("a program that owns MPI keeps it: trainrun neither initialises nor finalizes it") {
  for (const char* order : {"shutdown-first", "finalize-first"}) {
    CAPTURE(order);
    const ProcessResult r = run_plain_mpirun({"-np", "2", program_path("USER_MPI_PROGRAM"), order});
    CHECK(r.exit_code == 0);
    const std::string mpi_sum = std::string(order) == "shutdown-first" ? "1" : "0";
    CHECK(contains(r.out, "rank 0: mpi sum=1 mpi_sum=" + mpi_sum + "\n"));
    CHECK(contains(r.out, "rank 1: mpi sum=1 mpi_sum=" + mpi_sum + "\n"));
    if (mpi_sum == "0") {
      CHECK(count(r.out, "): init: MPI was already finalized in this process; MPI cannot be initialized again\n") == 2);
    }
  }
}

TEST_CASE("a program that leaves shutdown to exit still ends cleanly (MPI finalized at exit)") {
  const ProcessResult r = run_trainrun({"--mpi", "-np", "2", rank_program(), "allreduce", "noshutdown"});
  CHECK(r.exit_code == 0);
  CHECK(count(r.out, "sum=1") == 2);
  CHECK(r.err.empty());
}

TEST_CASE("shutdown() then init() again reuses MPI") {
  const ProcessResult r = run_trainrun({"--mpi", "-np", "2", rank_program(), "allreduce", "shutdown", "allreduce"});
  CHECK(r.exit_code == 0);
  CHECK(count(r.out, "sum=1") == 4);
  CHECK(r.err.empty());
}

TEST_CASE("a failing rank's exit code ends the job, even while its peers wait in a collective") {
  std::string tag;
  // Rank 2 exits 7 through exit() (at-exit handlers run) while the others
  // block in a barrier: MPI must not be finalized on that path, or rank 2
  // would wait for its peers forever.
  const ProcessResult r =
      run_trainrun({"--mpi", "-np", "4", rank_program(), "init", "quit:2:7", "init", "sleep:60000"}, &tag);
  CHECK(r.exit_code == 7);
  CHECK(r.seconds < 20);
  CHECK(contains(r.err, "trainrun: job failed: mpirun exited with code 7"));
  check_nothing_left(tag);
}

TEST_CASE("a rank killed by a signal: 128+N") {
  std::string tag;
  const ProcessResult r =
      run_trainrun({"--mpi", "-np", "2", rank_program(), "init", "raise:1:11", "sleep:60000"}, &tag);
  CHECK(r.exit_code == 139);
  CHECK(contains(r.err, "signal 11"));
  check_nothing_left(tag);
}

TEST_CASE("Ctrl-C stops mpirun and every rank; trainrun exits 130") {
  const VaderSegmentsGuard segments;  // the stopped ranks cannot unlink theirs
  std::string tag;
  Child job({trainrun_bin(), "--mpi", "-np", "3", "--grace", "2", rank_program(), "init", "print:ready", "sleep:60000"},
            tagged(&tag));
  REQUIRE(job.wait_for_output("rank 2: ready", std::chrono::seconds(30)));
  job.signal(SIGINT);
  const ProcessResult r = job.wait();
  CHECK(r.exit_code == 130);
  CHECK(contains(r.err, "trainrun: received SIGINT, stopping the job"));
  CHECK(r.seconds < 20);
  check_nothing_left(tag);
}

TEST_CASE("kill -9 of trainrun takes mpirun and the ranks with it") {
  // Killed ranks cannot unlink their vader segments and mpirun, killed too,
  // cannot either: the guard removes what this job left.
  const VaderSegmentsGuard segments;
  std::string tag;
  Child job({trainrun_bin(), "--mpi", "-np", "2", rank_program(), "init", "print:ready", "sleep:60000"}, tagged(&tag));
  REQUIRE(job.wait_for_output("rank 1: ready", std::chrono::seconds(30)));
  job.signal(SIGKILL);
  job.wait();
  check_nothing_left(tag);
}

// Two ranks share the host: OMP_NUM_THREADS=1 goes with them, as under torchrun.
TEST_CASE("--dry-run prints the mpirun command and runs nothing") {
  const ProcessResult r = run_trainrun({"--mpi", "-np", "2", "--backend", "mpi", "--mpi-args", "--mca btl 'self,tcp'",
                                        "--dry-run", rank_program(), "a b"});
  CHECK(r.exit_code == 0);
  const bool yield = std::thread::hardware_concurrency() < 2;
  CHECK(r.out == g_mpirun + " -np 2 -H localhost:2 --bind-to none --map-by slot " +
                     (yield ? "--mca mpi_yield_when_idle 1 " : "") + "--tag-output " +
                     (::geteuid() == 0 ? "--allow-run-as-root " : "") +
                     "-x OMP_NUM_THREADS=1 -x TRAINRUN_BACKEND=mpi --mca btl self,tcp " + rank_program() + " 'a b'\n");
}

TEST_CASE("clear errors before anything starts") {
  ProcessOptions no_mpirun;
  no_mpirun.env.push_back("PATH=/nonexistent");
  const ProcessResult missing = run_process({trainrun_bin(), "--mpi", "-np", "2", rank_program()}, no_mpirun);
  CHECK(missing.exit_code == 127);
  CHECK(missing.err ==
        "trainrun: error: --launcher mpirun: mpirun not found in PATH; install Open MPI "
        "(Debian/Ubuntu: apt-get install openmpi-bin)\n");
  const ProcessResult gloo = run_trainrun({"--mpi", "-np", "2", "--backend", "gloo", rank_program()});
  CHECK(gloo.exit_code == 2);
  CHECK(contains(gloo.err, "--backend tcp needs trainrun's rendezvous"));
  const ProcessResult program = run_trainrun({"--mpi", "-np", "2", "/nonexistent/prog"});
  CHECK(program.exit_code == 127);
  CHECK(program.err == "trainrun: error: no such file: /nonexistent/prog\n");
  const ProcessResult quote = run_trainrun({"--mpi", "-np", "2", "--mpi-args", "'oops", rank_program()});
  CHECK(quote.exit_code == 2);
  CHECK(quote.err == "trainrun: error: --mpi-args: unterminated ' quote in: 'oops\n");
  // --dry-run serves every launcher: with mpirun it prints the mpirun command.
  const ProcessResult dry = run_trainrun({"--mpi", "-np", "2", "--dry-run", rank_program()});
  CHECK(dry.exit_code == 0);
  CHECK(contains(dry.out, "mpirun -np 2 "));
  CHECK(dry.err.empty());
}

TEST_CASE("--check-build lists the mpi backend with Open MPI's version") {
  const ProcessResult r = run_trainrun({"--check-build"});
  CHECK(r.exit_code == 0);
  CHECK(contains(r.out, "  mpi\tOpen MPI v"));
}

int main(int argc, char** argv) {
  const auto mpirun = trainrun::cli::find_program("mpirun", std::getenv("PATH"));
  if (!mpirun.path) {
    std::printf("SKIP: mpirun not found in PATH (Debian: apt-get install openmpi-bin)\n");
    return 77;
  }
  g_mpirun = *mpirun.path;
  doctest::Context context(argc, argv);
  return context.run();
}
