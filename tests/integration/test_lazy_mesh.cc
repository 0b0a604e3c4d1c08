// Links made at first use (backends/tcp/peer_links.h) in real jobs over
// TCP (--no-shm), with tests/integration/lazy_mesh_program.cc: a rank
// holds links only to the peers its collectives talk to (an allreduce's
// partners, not every rank), an alltoall links every pair, a send one; a
// job of 64 ranks starts, reduces and ends cleanly; a peer that is gone
// before its link is made is named at once, never waited for, and one that
// is stopped is named in the wait warnings and at the collective timeout.
#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <utility>

#include "tests/integration/trainrun_runner.h"

using namespace trainrun::test;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

std::string lazy_program() { return program_path("LAZY_MESH_PROGRAM"); }

ProcessResult run_lazy(const std::string& np, const std::vector<std::string>& steps, std::string* tag = nullptr) {
  std::vector<std::string> args{"--local", "--no-shm", "-np", np, lazy_program()};
  args.insert(args.end(), steps.begin(), steps.end());
  ProcessOptions options;
  options.timeout = 5min;
  return run_trainrun(args, tag, options);
}

// Rank 0's "sockets per rank: min X max Y" as {X, Y}.
std::pair<int, int> sockets_of(const ProcessResult& r) {
  std::smatch m;
  REQUIRE_MESSAGE(std::regex_search(r.out, m, std::regex("sockets per rank: min (\\d+) max (\\d+)")), r.out, r.err);
  return {std::stoi(m[1]), std::stoi(m[2])};
}

// A job that ran every step on every rank and left nothing.
void check_clean(const ProcessResult& r, const std::string& np, const std::string& tag) {
  INFO(r.out, r.err);
  CHECK(!r.timed_out);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.out, "size " + np + ": ok"));
  CHECK(!contains(r.out, "wrong"));
  CHECK(!contains(r.out, "error"));
  CHECK(nothing_left(tag, 5s));
}

// The pid of rank `rank` of the job whose processes carry `tag`, or -1.
pid_t rank_pid(const std::string& tag, int rank) {
  const std::string entry = "TRAINRUN_RANK=" + std::to_string(rank);
  for (pid_t pid : processes_with_env(tag)) {
    const std::string environ = read_file("/proc/" + std::to_string(pid) + "/environ");
    if (environ.find(std::string(1, '\0') + entry + '\0') != std::string::npos || environ.rfind(entry + '\0', 0) == 0) {
      return pid;
    }
  }
  return -1;
}

}  // namespace

// Besides its links a rank holds its listening port (its rendezvous
// connection it let go of once formed: lib/init.cc); a dial that lost the
// tie-break (both ranks of a pair dial at once in these collectives) may
// still be closing when the rank counts.
constexpr int kFixed = 1;
constexpr int kSlack = 2;

TEST_CASE("8 ranks: an allreduce links each rank to its 3 partners; an alltoall to all 7; a send adds one pair") {
  std::string tag;
  const ProcessResult reduced = run_lazy("8", {"allreduce", "sockets"}, &tag);
  check_clean(reduced, "8", tag);
  const auto [least, most] = sockets_of(reduced);
  CHECK(least >= 3 + kFixed);
  CHECK(most <= 3 + kFixed + kSlack);  // not 7, let alone 14 (mesh and point-to-point)

  const ProcessResult all = run_lazy("8", {"allreduce", "alltoall", "sockets"}, &tag);
  check_clean(all, "8", tag);
  const auto [all_least, all_most] = sockets_of(all);
  CHECK(all_least >= 7 + kFixed);
  CHECK(all_most <= 7 + kFixed + kSlack);

  // Rank 0's partners are 1, 2 and 4: a message to 7 links 0 and 7, and
  // nobody else more.
  const ProcessResult sent = run_lazy("8", {"allreduce", "p2p:0:7", "sockets"}, &tag);
  check_clean(sent, "8", tag);
  const auto [sent_least, sent_most] = sockets_of(sent);
  CHECK(sent_most >= 3 + 1 + kFixed);
  CHECK(sent_most <= 3 + 1 + kFixed + kSlack);
  CHECK(sent_least <= 3 + kFixed + kSlack);
}

TEST_CASE("64 ranks on one host over TCP: init, one allreduce, exit; every sum right, a few links each") {
  std::string tag;
  const ProcessResult r = run_lazy("64", {"allreduce", "sockets"}, &tag);
  check_clean(r, "64", tag);
  // Recursive doubling's 6 partners, where every pair linked at start
  // held 63 (twice: point-to-point too).
  const auto [least, most] = sockets_of(r);
  CHECK(least >= 6 + kFixed);
  CHECK(most <= 6 + kFixed + kSlack);
}

// A file whose creation lets the waiting ranks go on ("await:PATH").
struct Gate {
  fs::path path = fs::temp_directory_path() / ("trainrun-lazy-gate-" + std::to_string(::getpid()));
  Gate() { fs::remove(path); }
  ~Gate() { fs::remove(path); }
  void open() const { std::ofstream(path) << "go\n"; }
};

TEST_CASE("a peer that is gone before its link is made: the collective fails at once, naming it") {
  Gate gate;
  ProcessOptions options;
  options.env = {unique_tag(), "TRAINRUN_COLLECTIVE_TIMEOUT=600"};
  options.timeout = 5min;
  const std::string tag = options.env[0];
  // Rank 3 exits first; the others wait at the gate, then allreduce: rank
  // 2's first partner is 3, whose port nobody listens on any more (and rank
  // 1's second: whichever of the two gets there first names rank 3).
  Child job({trainrun_bin(), "--local", "--no-shm", "-np", "4", lazy_program(), "exit:3", "await:" + gate.path.string(),
             "allreduce"},
            options);
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  while (rank_pid(tag, 3) <= 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(20ms);
  while (rank_pid(tag, 3) > 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(20ms);
  gate.open();
  const ProcessResult r = job.wait();
  INFO(r.out, r.err);
  CHECK(!r.timed_out);
  CHECK(r.exit_code == 1);
  CHECK((contains(r.out, "rank 2: error: rank 2 (") || contains(r.out, "rank 1: error: rank 1 (")));
  CHECK(contains(r.out, "allreduce: direct mesh: cannot connect to rank 3 (127.0.0.1:"));
  CHECK(contains(r.out, "Connection refused (ECONNREFUSED)"));
  CHECK(r.seconds < 300);  // far below the 600 s collective timeout: nobody waited for rank 3
  CHECK(nothing_left(tag, 5s));
}

TEST_CASE("a peer stopped before its link is made: warned about by rank, then named at the collective timeout") {
  Gate gate;
  ProcessOptions options;
  options.env = {unique_tag(), "TRAINRUN_COLLECTIVE_TIMEOUT=4", "TRAINRUN_STALL_WARNING=1"};
  options.timeout = 5min;
  const std::string tag = options.env[0];
  Child job({trainrun_bin(), "--local", "--no-shm", "--grace", "1", "-np", "4", lazy_program(),
             "await:" + gate.path.string(), "allreduce"},
            options);
  // Every rank is past init (it knows every address); rank 3 stops there,
  // so its links thread answers no dial: rank 2's first partner is 3.
  REQUIRE(job.wait_for_output("rank 3: awaiting", 120s));
  const pid_t stopped = rank_pid(tag, 3);
  REQUIRE(stopped > 0);
  REQUIRE(::kill(stopped, SIGSTOP) == 0);
  gate.open();
  const ProcessResult r = job.wait();
  INFO(r.out, r.err);
  CHECK(!r.timed_out);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.err, "trainrun: rank 2 ("));
  CHECK(contains(r.err, "): waiting: allreduce (core call #"));
  CHECK(contains(r.err, " s for rank 3 ("));
  CHECK((contains(r.out, "rank 2: error: rank 2 (") || contains(r.out, "rank 1: error: rank 1 (")));
  CHECK(contains(r.out, "allreduce: no progress with rank 3 (127.0.0.1:"));
  CHECK(contains(r.out, ") for 4 s"));
  CHECK(nothing_left(tag, 10s));
}
