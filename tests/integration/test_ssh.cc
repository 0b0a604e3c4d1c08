// Multi-host jobs over SSH, for real: four network-namespace hosts with
// their own sshd (tests/integration/ssh_hosts.h), the built trainrun as
// the launcher. What a user sees: results, exit codes, the pre-flight
// table, "lost connection" messages, and that nothing of a job is left on
// any host. Exits 77 (skip) with the reason when the hosts cannot be made.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <functional>
#include <dirent.h>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <thread>

#include "tests/integration/report_check.h"
#include "tests/integration/ssh_hosts.h"
#include "tests/integration/ssh_test_main.h"
#include "tests/integration/trainrun_runner.h"

using namespace trainrun::test;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

SshHosts* g_hosts = nullptr;
SshHosts& hosts() { return *g_hosts; }

// trainrun ARGS as the launcher (with the test's ~/.ssh); the ranks get
// the test's tag through -x, since remote ranks inherit nothing else.
std::vector<std::string> launcher(std::vector<std::string> args, const std::string& tag) {
  args.insert(args.begin(), {trainrun_bin(), "-x", tag});
  return hosts().client_argv(args);
}

ProcessResult run_remote(std::vector<std::string> args, std::string* tag_out = nullptr, ProcessOptions options = {}) {
  options.env.push_back(unique_tag());
  if (tag_out) *tag_out = options.env.back();
  return run_process(launcher(std::move(args), options.env.back()), options);
}

// Nothing of the job anywhere: no rank (by tag) and nothing but the sshd
// listeners in the hosts' namespaces (no agent, no session).
bool nothing_left_anywhere(const std::string& tag, milliseconds within = seconds(3)) {
  return nothing_left(tag, within) && hosts().nothing_on_hosts(within);
}

// The lines of `text` that contain `what`.
std::string line_with(const std::string& text, const std::string& what) {
  std::stringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (contains(line, what)) return line;
  }
  return "";
}

struct FaultResult {
  ProcessResult result;
  double seconds_after_fault = 0;
};

// A job of sleeping ranks on `hosts_option` (one rank per host); once every
// rank is ready, `fault` happens to a host; then trainrun's result.
// `report`: the --report file, if any.
FaultResult fault_mid_job(const std::string& hosts_option, const std::function<void()>& fault, std::string* tag,
                          const std::string& report = "", const std::vector<std::string>& more = {}) {
  ProcessOptions options;
  options.env.push_back(unique_tag());
  *tag = options.env.back();
  std::vector<std::string> args{"-H",           hosts_option, "--grace",     "1",
                                rank_program(), "init",       "print:ready", "sleep:60000"};
  if (!report.empty()) args.insert(args.begin(), {"--report", report});
  args.insert(args.begin(), more.begin(), more.end());
  Child job(launcher(args, *tag), options);
  const int last_rank = static_cast<int>(std::count(hosts_option.begin(), hosts_option.end(), ','));
  REQUIRE(job.wait_for_output("rank " + std::to_string(last_rank) + ": ready", seconds(30)));
  const auto start = std::chrono::steady_clock::now();
  fault();
  FaultResult f;
  f.result = job.wait();
  f.seconds_after_fault = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return f;
}

// Whether a table in `text` has a row for `host` whose check is `check`
// and whose result starts with `result`, whatever the column widths.
bool row_says(const std::string& text, const std::string& host, const std::string& check, const std::string& result) {
  std::stringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const std::size_t start = line.find_first_not_of(' ');
    if (start == std::string::npos || line.compare(start, host.size() + 1, host + " ") != 0) continue;
    std::string rest = line.substr(start + host.size());
    rest.erase(0, rest.find_first_not_of(' '));
    if (rest.compare(0, check.size() + 1, check + " ") != 0) continue;
    rest.erase(0, rest.find_first_not_of(' ', check.size()));
    if (rest.rfind(result, 0) == 0) return true;
  }
  return false;
}

std::string fingerprint(const std::string& public_key) {
  const ProcessResult r = run_process({"/usr/bin/ssh-keygen", "-l", "-f", public_key});
  INFO(r.out, r.err);
  std::stringstream words(r.out);
  std::string bits, hash;
  words >> bits >> hash;
  return hash;
}

struct LauncherLoad {
  int threads = -1, descriptors = -1;
};

// The launcher's threads and descriptors while a job of sleeping ranks on
// `hosts_option` ("h1:2,h2:1": ranks per host) runs; the fewest descriptors
// seen over a second, as a rank's closed rendezvous connection may take the
// server a moment to close too.
LauncherLoad launcher_load(const std::string& hosts_option, const std::vector<std::string>& more = {}) {
  ProcessOptions options;
  options.env.push_back(unique_tag());
  std::vector<std::string> args{"-H", hosts_option};
  args.insert(args.end(), more.begin(), more.end());
  args.insert(args.end(), {rank_program(), "init", "print:ready", "sleep:60000"});
  Child job(launcher(args, options.env.back()), options);
  int ranks = 0;
  std::stringstream hosts(hosts_option);
  for (std::string host; std::getline(hosts, host, ',');) ranks += std::stoi(host.substr(host.find(':') + 1));
  LauncherLoad load;
  if (job.wait_for_output("rank " + std::to_string(ranks - 1) + ": ready", seconds(30))) {
    load.threads = proc_entries(job.pid(), "task");
    load.descriptors = proc_entries(job.pid(), "fd");
    for (int i = 0; i < 10; ++i) {
      std::this_thread::sleep_for(milliseconds(100));
      load.descriptors = std::min(load.descriptors, proc_entries(job.pid(), "fd"));
    }
  }
  job.signal(SIGTERM);
  CHECK(job.wait().exit_code == 143);
  CHECK(nothing_left_anywhere(options.env.back()));
  return load;
}

}  // namespace

TEST_CASE("conformance: 8 ranks on 4 hosts") {
  std::string tag;
  const ProcessResult r = run_remote({"-x", "TRAINRUN_COLLECTIVE_TIMEOUT=120", "-H", "h1:2,h2:2,h3:2,h4:2", "-np", "8",
                                      "--backend", "tcp", program_path("CONFORMANCE")},
                                     &tag);
  INFO(r.out, r.err);
  CHECK(r.exit_code == 0);
  CHECK(count(r.out, "of 8 (tcp): passed") == 8);
  CHECK(nothing_left_anywhere(tag));
}

TEST_CASE("conformance: 2 hosts x 2 ranks, allreduce two-level (shared memory in a host, TCP between)") {
  std::string tag;
  const ProcessResult r =
      run_remote({"-x", "TRAINRUN_COLLECTIVE_TIMEOUT=120", "-x", "CONFORMANCE_TRANSPORT=shm", "-H", "h1:2,h2:2", "-np",
                  "4", "--backend", "tcp", "--verbose", program_path("CONFORMANCE")},
                 &tag);
  INFO(r.out, r.err);
  CHECK(r.exit_code == 0);
  CHECK(count(r.out, "of 4 (tcp): passed") == 4);
  CHECK(contains(r.err, "collectives (tcp): two-level"));
  CHECK(nothing_left_anywhere(tag));
}

// 16 MiB blocks on links shaped to 1 Gbit/s: more than a connection holds,
// so a rank that waited in shared memory with part of its block unsent
// would hang the job (it did, with the allgather's second stream step).
TEST_CASE(
    "conformance: 2 hosts x 2 ranks, allgather, allreduce and reducescatter of blocks larger than the sockets hold") {
  auto tc = [](int h, const char* verb, std::vector<std::string> tail) {
    std::vector<std::string> argv = {"/usr/sbin/ip", "netns", "exec", hosts().netns(h), "/usr/sbin/tc",
                                     "qdisc",        verb,    "dev",  "eth0",           "root"};
    argv.insert(argv.end(), tail.begin(), tail.end());
    return run_process(argv).exit_code == 0;
  };
  struct Unshape {
    std::function<void()> undo;
    ~Unshape() { undo(); }
  } unshape{[&] {
    for (int h : {1, 2}) tc(h, "del", {});
  }};
  for (int h : {1, 2}) REQUIRE(tc(h, "replace", {"tbf", "rate", "1gbit", "burst", "128kb", "latency", "10ms"}));
  std::string tag;
  const ProcessResult r =
      run_remote({"-x", "TRAINRUN_COLLECTIVE_TIMEOUT=60", "-x", "CONFORMANCE_LARGE_BLOCKS=1", "-H", "h1:2,h2:2", "-np",
                  "4", "--backend", "tcp", program_path("CONFORMANCE"), "--test-case=*larger than the sockets*"},
                 &tag);
  INFO(r.out, r.err);
  CHECK(r.exit_code == 0);
  CHECK(count(r.out, "of 4 (tcp): passed") == 4);
  CHECK(nothing_left_anywhere(tag));
}

// The switch points moved down (launcher --switch-points) so that small
// counts cross every one of them: TCP mesh below 4 KiB, every local rank
// carrying the host's sum across below 16 KiB, local rank 0 alone below 64
// KiB, pipelined in 64 KiB chunks above; reducescatter's leader below 16
// KiB (513 elements per rank of 4: 8208 B in 4-byte types, 16416 B in
// 8-byte ones); conformance tries the sizes around each.
TEST_CASE("conformance: 2 hosts x 2 ranks, allreduce at moved switch points (--switch-points)") {
  std::string tag;
  const ProcessResult r =
      run_remote({"-x", "TRAINRUN_COLLECTIVE_TIMEOUT=120", "-x", "CONFORMANCE_TRANSPORT=shm", "-H", "h1:2,h2:2", "-np",
                  "4", "--backend", "tcp", "--verbose", "--switch-points",
                  "two-level=4K,leader=16K,split=64K,chunk=64K,reducescatter-split=16K", program_path("CONFORMANCE")},
                 &tag);
  INFO(r.out, r.err);
  CHECK(r.exit_code == 0);
  CHECK(count(r.out, "of 4 (tcp): passed") == 4);
  CHECK(contains(r.err,
                 "two-level allreduce (shared memory within each host, TCP mesh between hosts): TCP mesh "
                 "below 4 KiB, two-level with every local rank carrying the host's sum across below 16 KiB, "
                 "two-level with local rank 0 carrying the host's sum across below 64 KiB, two-level with each "
                 "local rank carrying 1/L across from 64 KiB (pipelined in 64 KiB chunks); allgather and "
                 "reducescatter two-level when ranks are numbered host by host (reducescatter: local rank 0 carrying "
                 "the host's share across below 16 KiB)"));
  CHECK(nothing_left_anywhere(tag));
}

// Reducescatter across hosts goes two-level; the engine's uneven rows are
// the only way to give ranks blocks of different sizes.
TEST_CASE("conformance: 2 hosts x 2 ranks, the engine's uneven reducescatter, pipelined in 64 KiB chunks") {
  std::string tag;
  const ProcessResult r =
      run_remote({"-x", "TRAINRUN_COLLECTIVE_TIMEOUT=120", "-H", "h1:2,h2:2", "-np", "4", "--backend", "tcp",
                  "--switch-points", "chunk=64K", program_path("ENGINE_MULTIRANK"), "--test-case=*reducescatter*"},
                 &tag);
  INFO(r.out, r.err);
  CHECK(r.exit_code == 0);
  CHECK(count(r.out, "of 4 (tcp): passed") == 4);
  CHECK(nothing_left_anywhere(tag));
}

TEST_CASE("a bad TRAINRUN_SWITCH_POINTS fails init across hosts, naming the part") {
  std::string tag;
  const ProcessResult r = run_remote({"-x", "TRAINRUN_SWITCH_POINTS=split=4X", "-H", "h1:2,h2:2", "-np", "4",
                                      "--backend", "tcp", program_path("CONFORMANCE")},
                                     &tag);
  INFO(r.out, r.err);
  CHECK(r.exit_code != 0);
  CHECK(contains(r.err, "TRAINRUN_SWITCH_POINTS: 'split=4X': the value is not a size in bytes (e.g. 64K, 1M)"));
  CHECK(nothing_left_anywhere(tag));
}

// 3 hosts: the crossing rings from 16 KiB (no power of two,
// contract/switch_points.h cross_ring_min), and reducescatter's blocks
// cross by the ring among the hosts.
TEST_CASE("conformance: 3 hosts x 2 ranks, allreduce and reducescatter") {
  std::string tag;
  const ProcessResult r =
      run_remote({"-x", "TRAINRUN_COLLECTIVE_TIMEOUT=120", "-H", "h1:2,h2:2,h3:2", "-np", "6", "--backend", "tcp",
                  program_path("CONFORMANCE"), "--test-case=allreduce*,reducescatter*"},
                 &tag);
  INFO(r.out, r.err);
  CHECK(r.exit_code == 0);
  CHECK(count(r.out, "of 6 (tcp): passed") == 6);
  CHECK(nothing_left_anywhere(tag));
}

// The splits' pipelined rings among 3 hosts, in 16 KiB chunks so that the
// conformance sizes run as many chunks: from 32 KiB every local rank's
// allreduce blocks stream round the ring of its counterparts (16 KiB blocks
// and up, contract/switch_points.h cross_ring_min; below, recursive
// doubling), and from 16 KiB reducescatter's slices of every host's blocks,
// the steps of one chunk after another's.
TEST_CASE("conformance: 3 hosts x 2 ranks, allreduce and reducescatter split as pipelined rings (--switch-points)") {
  std::string tag;
  const ProcessResult r =
      run_remote({"-x", "TRAINRUN_COLLECTIVE_TIMEOUT=120", "-H", "h1:2,h2:2,h3:2", "-np", "6", "--backend", "tcp",
                  "--verbose", "--switch-points", "two-level=4K,leader=4K,split=16K,chunk=16K,reducescatter-split=16K",
                  program_path("CONFORMANCE"), "--test-case=allreduce*,reducescatter*"},
                 &tag);
  INFO(r.out, r.err);
  CHECK(r.exit_code == 0);
  CHECK(count(r.out, "of 6 (tcp): passed") == 6);
  CHECK(contains(r.err, "two-level with each local rank carrying 1/L across from 16 KiB (pipelined in 16 KiB chunks)"));
  CHECK(nothing_left_anywhere(tag));
}

// Four ranks a host: the collectives at the two-level switch points and
// each other kind once; every dtype and op ran at 8 ranks above (the whole
// program at 16 ranks on these 2 CPUs took 240-290 s).
TEST_CASE("conformance: 16 ranks on 4 hosts") {
  std::string tag;
  ProcessOptions options;
  options.timeout = seconds(600);
  const ProcessResult r = run_remote(
      {"-x", "TRAINRUN_COLLECTIVE_TIMEOUT=300", "-H", "h1:4,h2:4,h3:4,h4:4", "--backend", "gloo",
       program_path("CONFORMANCE"),
       "--test-case=world*,allreduce just below*,broadcast*,allgather? in place*,alltoall*,barrier*,invalid*"},
      &tag, options);
  INFO(r.out, r.err);
  CHECK(r.exit_code == 0);
  CHECK(count(r.out, "of 16 (tcp): passed") == 16);
  CHECK(nothing_left_anywhere(tag));
}

TEST_CASE("ranks run on their hosts, reduce across them, and MASTER_ADDR is rank 0's host") {
  const ProcessResult names = run_remote({"-H", "h1,h2,h3,h4", "/bin/hostname"});
  INFO(names.out, names.err);
  CHECK(names.exit_code == 0);
  for (int h = 1; h <= 4; ++h) {
    CHECK(contains(names.out, "[" + std::to_string(h - 1) + "] h" + std::to_string(h) + "\n"));
  }
  std::string tag;
  const ProcessResult r = run_remote(
      {"-H", "h2:2,h3:1,h4:1", rank_program(), "allreduce", "env:MASTER_ADDR", "env:TRAINRUN_HOSTNAME"}, &tag);
  INFO(r.out, r.err);
  CHECK(r.exit_code == 0);
  CHECK(count(r.out, "sum=6\n") == 4);
  CHECK(count(r.out, "MASTER_ADDR=" + hosts().address(2) + "\n") == 4);
  CHECK(contains(r.out, "[3] rank 3: TRAINRUN_HOSTNAME=h4\n"));
  CHECK(r.err.empty());  // the OMP_NUM_THREADS note is --verbose's
  CHECK(nothing_left_anywhere(tag));
}

TEST_CASE("this machine and remote hosts in one job") {
  std::string tag;
  const ProcessResult r =
      run_remote({"-H", "localhost:1,h1:1,h2:1", rank_program(), "allreduce", "env:MASTER_ADDR"}, &tag);
  INFO(r.out, r.err);
  CHECK(r.exit_code == 0);
  CHECK(count(r.out, "sum=3\n") == 3);
  CHECK(count(r.out, "MASTER_ADDR=" + hosts().launcher_address() + "\n") == 3);
  CHECK(nothing_left_anywhere(tag));
}

TEST_CASE("every pre-flight failure in one table, all hosts checked at once, nothing started") {
  std::string tag;
  const ProcessResult r = run_remote(
      {"--ssh-connect-timeout", "2", "-H", "h1,refused,blackhole,no-such-host.invalid,nobody@h2,badkey,unknown",
       rank_program(), "print:started"},
      &tag);
  INFO(r.out, r.err);
  CHECK(r.exit_code == 125);
  CHECK(r.seconds < 2 + 3);  // in parallel: one timeout, not one per host
  CHECK(contains(r.err,
                 "trainrun: pre-flight checks failed on 6 of 7 host(s) (refused, blackhole, no-such-host.invalid, "
                 "nobody@h2, badkey, unknown); nothing was started\n"));
  CHECK(contains(r.err, "  host "));
  CHECK(row_says(r.err, "refused", "connect", "connection refused"));
  CHECK(row_says(r.err, "blackhole", "connect", "timed out"));
  CHECK(row_says(r.err, "no-such-host.invalid", "connect", "cannot resolve the host name no-such-host.invalid"));
  CHECK(row_says(r.err, "nobody@h2", "login", "authentication failed (publickey) as nobody"));
  const std::string mismatch = line_with(r.err, "  badkey ");
  CHECK(contains(mismatch, "host key  host key mismatch: " + hosts().address(3) + " presents ssh-ed25519 " +
                               fingerprint(hosts().dir() + "/hostkey-h3.pub")));
  const std::string unknown = line_with(r.err, "  unknown ");
  CHECK(contains(unknown, "host key  unknown host key ssh-ed25519 " + fingerprint(hosts().dir() + "/hostkey-h4.pub")));
  CHECK(contains(unknown, "ssh-keyscan -p 22 " + hosts().address(4) + " >> ~/.ssh/known_hosts"));
  CHECK(line_with(r.err, "  h1 ").empty());
  CHECK_FALSE(contains(r.out, "started"));
  CHECK(nothing_left_anywhere(tag));
}

TEST_CASE("Ctrl-C during the pre-flight: trainrun stops at once and nothing starts") {
  ProcessOptions options;
  options.env.push_back(unique_tag());
  Child job(launcher({"--ssh-connect-timeout", "30", "-H", "h1,blackhole", rank_program(), "print:started"},
                     options.env.back()),
            options);
  ::usleep(500'000);
  const auto interrupted = std::chrono::steady_clock::now();
  job.signal(SIGINT);
  const ProcessResult r = job.wait();
  INFO(r.out, r.err);
  CHECK(std::chrono::steady_clock::now() - interrupted < seconds(2));
  CHECK(r.exit_code == 130);
  CHECK(r.err == "trainrun: received SIGINT during the pre-flight checks; nothing was started\n");
  CHECK(hosts().nothing_on_hosts(seconds(3)));
}

TEST_CASE("the program, the directory, the remote trainrun and its version are checked on each host") {
  const ProcessResult missing = run_remote({"-H", "h1,h2", "/nonexistent/prog"});
  INFO(missing.out, missing.err);
  CHECK(missing.exit_code == 125);
  CHECK(row_says(missing.err, "h1", "program", "no such file: /nonexistent/prog"));
  CHECK(row_says(missing.err, "h2", "program", "no such file: /nonexistent/prog"));

  const ProcessResult no_trainrun = run_remote({"--remote-trainrun", "/nonexistent/trainrun", "-H", "h1", "/bin/true"});
  INFO(no_trainrun.out, no_trainrun.err);
  CHECK(no_trainrun.exit_code == 125);
  CHECK(row_says(no_trainrun.err, "h1", "remote trainrun", "no such file: /nonexistent/trainrun"));

  // An agent that says Hello with another version, then waits.
  const std::string old_agent = hosts().dir() + "/old-trainrun";
  std::ofstream(old_agent) << "#!/bin/sh\nprintf '\\024\\000\\000\\000\\000\\000\\000\\000\\012\\000\\000\\000"
                              "0.0.0-test'\nexec cat > /dev/null\n";
  ::chmod(old_agent.c_str(), 0755);
  const ProcessResult old = run_remote({"--remote-trainrun", old_agent, "-H", "h1,h2", "/bin/true"});
  INFO(old.out, old.err);
  CHECK(old.exit_code == 125);
  CHECK(row_says(old.err, "h2", "version",
                 "version mismatch: " + old_agent + " there is trainrun 0.0.0-test, this is trainrun "));

  // A directory only the launcher has: the ranks could not start in it.
  const std::string cwd = hosts().client_only_dir();
  const ProcessResult no_dir = run_process(
      hosts().client_argv({"/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", cwd, trainrun_bin(), "-H", "h3", "/bin/true"}));
  INFO(no_dir.out, no_dir.err);
  CHECK(no_dir.exit_code == 125);
  CHECK(row_says(no_dir.err, "h3", "directory", "no such directory: " + cwd));
  CHECK(hosts().nothing_on_hosts(seconds(3)));
}

TEST_CASE("--ssh-accept-new adds an unknown host key, never a changed one") {
  const std::string known = hosts().dir() + "/client-home/.ssh/known_hosts_new";
  ::unlink(known.c_str());
  const ProcessResult refused = run_remote({"-H", "newhost", "/bin/true"});
  INFO(refused.out, refused.err);
  CHECK(refused.exit_code == 125);
  CHECK(contains(refused.err, "unknown host key ssh-ed25519 SHA256:"));
  const ProcessResult accepted = run_remote({"--ssh-accept-new", "-H", "newhost", "/bin/true"});
  INFO(accepted.out, accepted.err);
  CHECK(accepted.exit_code == 0);
  CHECK(contains(read_file(known), hosts().address(2) + " ssh-ed25519 "));
  const ProcessResult again = run_remote({"-H", "newhost", "/bin/true"});
  INFO(again.out, again.err);
  CHECK(again.exit_code == 0);
  const ProcessResult changed = run_remote({"--ssh-accept-new", "-H", "badkey", "/bin/true"});
  INFO(changed.out, changed.err);
  CHECK(changed.exit_code == 125);
  CHECK(contains(changed.err, "host key mismatch"));
}

TEST_CASE("more hosts cost the launcher no thread and three descriptors each") {
  // The launcher's hosts share a few pump threads (cli/ssh/pump_threads.h):
  // 1 host and 4 hosts run on the same number of threads, and each host
  // past the first adds its SSH session and its socketpair's two ends (its
  // rank lets go of its rendezvous connection once it has formed).
  const LauncherLoad one = launcher_load("h1:1");
  const LauncherLoad four = launcher_load("h1:1,h2:1,h3:1,h4:1");
  INFO("1 host: ", one.threads, " threads, ", one.descriptors, " descriptors; 4 hosts: ", four.threads, " threads, ",
       four.descriptors, " descriptors");
  REQUIRE(one.threads > 0);
  REQUIRE(four.threads > 0);
  CHECK(four.threads == one.threads);
  CHECK(four.descriptors - one.descriptors <= 3 * 3);
}

TEST_CASE("conformance: 8 ranks on 4 hosts started as a tree of agents (--tree-radix 1: h1 > h2 > h3 > h4)") {
  // A chain: every frame to h4 crosses three relays, every byte from it too.
  std::string tag;
  const ProcessResult r = run_remote({"-x", "TRAINRUN_COLLECTIVE_TIMEOUT=120", "-H", "h1:2,h2:2,h3:2,h4:2", "-np", "8",
                                      "--tree-radix", "1", "--backend", "tcp", program_path("CONFORMANCE")},
                                     &tag);
  INFO(r.out, r.err);
  CHECK(r.exit_code == 0);
  CHECK(count(r.out, "of 8 (tcp): passed") == 8);
  CHECK(nothing_left_anywhere(tag));
}

TEST_CASE("a tree of agents: output, exit codes and the pre-flight through relays; the launcher holds its radix") {
  std::string tag;
  const ProcessResult ok = run_remote({"-H", "h1:1,h2:1,h3:1,h4:1", "--tree-radix", "2", "--verbose", rank_program(),
                                       "init", "print:hello", "allreduce", "exit:3:5"},
                                      &tag);
  INFO(ok.out, ok.err);
  CHECK(ok.exit_code == 5);
  CHECK(count(ok.out, ": hello\n") == 4);
  CHECK(contains(ok.err, "trainrun: job failed: rank 3 (host h4, pid "));
  CHECK(contains(ok.err,
                 "agents start as a tree of radix 2: trainrun reaches the first 2 remote hosts, they start "
                 "the other 2 (--tree-radix)"));
  CHECK(nothing_left_anywhere(tag));
  // A host below a relay that fails its checks is named in the one table; nothing starts.
  const ProcessResult bad = run_remote({"-H", "h1:1,h2:1,h3:1,unknown:1", "--tree-radix", "2", rank_program()}, &tag);
  INFO(bad.out, bad.err);
  CHECK(bad.exit_code == 125);
  CHECK(contains(bad.err, "pre-flight checks failed on 1 of 4 host(s) (unknown); nothing was started"));
  CHECK(row_says(bad.err, "unknown", "connect", "cannot resolve the host name unknown"));
  CHECK(nothing_left_anywhere(tag));
  // The launcher reaches 1 host however many there are below it.
  const LauncherLoad flat = launcher_load("h1:1,h2:1,h3:1,h4:1");
  const LauncherLoad tree = launcher_load("h1:1,h2:1,h3:1,h4:1", {"--tree-radix", "1"});
  INFO("flat: ", flat.threads, " threads, ", flat.descriptors, " descriptors; tree: ", tree.threads, " threads, ",
       tree.descriptors, " descriptors");
  REQUIRE(tree.descriptors > 0);
  CHECK(tree.threads <= flat.threads);
  CHECK(flat.descriptors - tree.descriptors >= 3 * 3);  // 3 hosts' SSH session, socketpair end, wake pipe fewer
  // Nor a descriptor per rank: the ranks let go of the rendezvous once formed.
  const LauncherLoad wide = launcher_load("h1:3,h2:3,h3:3,h4:3", {"--tree-radix", "1"});
  INFO("tree, 3 ranks a host: ", wide.descriptors, " descriptors");
  CHECK(wide.descriptors <= tree.descriptors + 2);  // 8 ranks more
}

TEST_CASE("kill -9 of an interior agent: its host and the hosts below it are named, exit 125, nothing left") {
  // --tree-radix 2: trainrun reaches h1 and h2; h1 starts h3, h2 starts h4.
  std::string tag;
  const FaultResult f = fault_mid_job("h1:1,h2:1,h3:1,h4:1",
                                      [] {
                                        const std::vector<pid_t> agents = hosts().processes_on_hosts("trainrun", 1);
                                        REQUIRE(agents.size() == 1);
                                        ::kill(agents.front(), SIGKILL);
                                      },
                                      &tag, "", {"--tree-radix", "2"});
  const ProcessResult& r = f.result;
  INFO(r.out, r.err);
  CHECK(f.seconds_after_fault < 15);
  CHECK(r.exit_code == 125);
  // Once each: when it happens, not again as the job's summary.
  CHECK(count(r.err, "trainrun: the agent on h1 ended without an exit status (killed by a signal?)\n") == 1);
  CHECK(count(r.err, "trainrun: lost connection to h3: it was reached through h1, whose agent is gone\n") == 1);
  CHECK_FALSE(contains(r.err, "lost connection to h4"));
  CHECK(nothing_left_anywhere(tag, seconds(10)));
}

TEST_CASE("a remote rank exits 7: trainrun exits 7, names it, and nothing is left on any host") {
  std::string tag;
  const ProcessResult r =
      run_remote({"-H", "h1:2,h2:2", "--grace", "2", rank_program(), "spawn-tree", "exit:3:7", "sleep:60000"}, &tag);
  INFO(r.out, r.err);
  CHECK(r.exit_code == 7);
  CHECK(contains(r.err, "trainrun: job failed: rank 3 (host h2, pid "));
  CHECK(contains(r.err, "exited with code 7\n"));
  CHECK(r.seconds < 1 + 2 + 2);
  CHECK(nothing_left_anywhere(tag));
}

TEST_CASE("the JSON report of a remote job: its hosts, each rank on its host, the failing remote rank") {
  if (const std::string why = schema_validator_missing(); !why.empty()) {
    const std::string text = "skipped: " + why;
    MESSAGE(text);
    return;
  }
  const TempReport report;
  const std::string& path = report.path;
  std::string tag;
  const ProcessResult r = run_remote(
      {"--report", path, "-H", "h1:1,h2:2", "--grace", "1", rank_program(), "init", "exit:2:3", "sleep:60000"}, &tag);
  INFO(r.out, r.err);
  CHECK(r.exit_code == 3);
  const nlohmann::json j = checked_report(path);
  REQUIRE(j.is_object());
  CHECK(j["launcher"] == "ssh");
  CHECK(j["hosts"] == nlohmann::json::parse(R"([{"name": "h1", "slots": 1, "remote": true},
                                                {"name": "h2", "slots": 2, "remote": true}])"));
  CHECK(j["outcome"] == "rank_failed");
  CHECK(j["failure"]["rank"] == 2);
  CHECK(contains(j["failure"]["cause"].get<std::string>(), "rank 2 (host h2, pid "));
  CHECK(j["ranks"][2]["host"] == "h2");
  CHECK(j["ranks"][2]["local_rank"] == 1);
  CHECK(j["ranks"][2]["exit_code"] == 3);
  CHECK(j["ranks"][2]["max_rss_kb"].get<long>() > 0);
  CHECK(j["ranks"][0]["backend"] == "tcp");
  CHECK(j["rendezvous_s"].is_number());
  CHECK(nothing_left_anywhere(tag));

  // A pre-flight failure: nothing started, the table's heading as the cause.
  const ProcessResult refused =
      run_remote({"--report", path, "--ssh-connect-timeout", "2", "-H", "h1,refused", rank_program(), "print:started"});
  CHECK(refused.exit_code == 125);
  const nlohmann::json k = checked_report(path);
  REQUIRE(k.is_object());
  CHECK(k["outcome"] == "preflight_failed");
  CHECK(k["exit_code"] == 125);
  CHECK(k["failure"]["cause"] == "trainrun: pre-flight checks failed on 1 of 2 host(s) (refused); nothing was started");
  CHECK(k["ranks"][1]["state"] == "not_started");
}

namespace {

// kill -9 of trainrun once every rank and what it started runs: nothing is
// left on any host within grace + 3 s.
void kill_launcher_mid_job(const std::vector<std::string>& more) {
  ProcessOptions options;
  options.env.push_back(unique_tag());
  const std::string tag = options.env.back();
  std::vector<std::string> args{"-H", "h1:2,h2:2,h3:2", "--grace", "1"};
  args.insert(args.end(), more.begin(), more.end());
  args.insert(args.end(), {rank_program(), "spawn-tree", "print:ready", "sleep:60000"});
  Child job(launcher(args, tag), options);
  REQUIRE(job.wait_for_output("rank 5: ready", seconds(30)));
  // Up to 20 s: the grandchildren start late on a loaded machine (CI, sanitizers).
  for (int i = 0; i < 1000 && processes_with_env(tag).size() < 6 * 4; ++i) ::usleep(20'000);
  REQUIRE(processes_with_env(tag).size() >= 6 * 4);
  job.signal(SIGKILL);
  job.wait();
  CHECK(nothing_left_anywhere(tag, seconds(1 + 3)));
}

}  // namespace

TEST_CASE("kill -9 of trainrun: nothing is left on any host within grace + 3 s") { kill_launcher_mid_job({}); }

TEST_CASE("a tree of agents: kill -9 of trainrun leaves nothing; Ctrl-C and stacks reach every relayed rank") {
  // --tree-radix 1: h1 > h2 > h3, each relay ends the hosts below it.
  kill_launcher_mid_job({"--tree-radix", "1"});
  std::string tag;
  const ProcessResult stacks = run_remote({"-H", "h1:1,h2:1,h3:1,h4:1", "--tree-radix", "1", "--timeout", "4",
                                           "--grace", "1", rank_program(), "init", "print:ready", "sleep:60000"},
                                          &tag);
  INFO(stacks.out, stacks.err);
  CHECK(stacks.exit_code == 124);
  CHECK(contains(stacks.err, "ranks 0-3 (h1, h2, h3, h4):\n"));
  CHECK(nothing_left_anywhere(tag));
  ProcessOptions options;
  options.env.push_back(unique_tag());
  Child job(launcher({"-H", "h1:1,h2:1,h3:1,h4:1", "--tree-radix", "1", "--grace", "1", rank_program(), "init",
                      "print:ready", "sleep:60000"},
                     options.env.back()),
            options);
  REQUIRE(job.wait_for_output("rank 3: ready", seconds(30)));
  job.signal(SIGINT);
  const ProcessResult stopped = job.wait();
  INFO(stopped.out, stopped.err);
  CHECK(stopped.exit_code == 130);
  CHECK(contains(stopped.err, "trainrun: stopped by SIGINT; all ranks were terminated"));
  CHECK(nothing_left_anywhere(options.env.back()));
}

TEST_CASE("Ctrl-C reaches every remote rank; the secret is on no command line and in no log") {
  ProcessOptions options;
  options.env.push_back(unique_tag());
  const std::string tag = options.env.back();
  Child job(launcher({"--verbose", "-H", "h1:1,h2:1", rank_program(), "init", "env:TRAINRUN_SECRET", "print:ready",
                      "sleep:60000"},
                     tag),
            options);
  REQUIRE(job.wait_for_output("rank 1: ready", seconds(30)));
  REQUIRE(job.wait_for_output("rank 0: ready", seconds(5)));
  job.signal(SIGINT);
  const ProcessResult r = job.wait();
  INFO(r.out, r.err);
  const std::string marker = "rank 0: TRAINRUN_SECRET=";
  const std::size_t at = r.out.find(marker);
  REQUIRE(at != std::string::npos);
  const std::string secret = r.out.substr(at + marker.size(), 64);
  CHECK(secret.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(r.exit_code == 130);
  CHECK(contains(r.err, "trainrun: stopped by SIGINT"));
  CHECK_FALSE(contains(r.err, secret));
  for (int h = 1; h <= 4; ++h) {
    CHECK_FALSE(contains(read_file(hosts().dir() + "/sshd-h" + std::to_string(h) + ".log"), secret));
  }
  CHECK(nothing_left_anywhere(tag));
}

TEST_CASE("while a job runs, its secret is in no /proc/*/cmdline, on any host") {
  ProcessOptions options;
  options.env.push_back(unique_tag());
  const std::string tag = options.env.back();
  Child job(
      launcher({"-H", "h1:1,h2:1,h3:1", rank_program(), "init", "env:TRAINRUN_SECRET", "print:ready", "sleep:60000"},
               tag),
      options);
  for (int rank = 0; rank < 3; ++rank) {
    REQUIRE(job.wait_for_output("rank " + std::to_string(rank) + ": ready", seconds(30)));
  }
  std::string secret;
  for (int i = 0; i < 3 && secret.empty(); ++i) {
    // The secret is in the ranks' environment: read it where a rank put it.
    for (pid_t pid : processes_with_env(tag)) {
      std::stringstream environ(read_file("/proc/" + std::to_string(pid) + "/environ"));
      std::string entry;
      while (std::getline(environ, entry, '\0')) {
        if (entry.rfind("TRAINRUN_SECRET=", 0) == 0) secret = entry.substr(16);
      }
    }
  }
  REQUIRE(secret.size() == 64);
  int scanned = 0;
  DIR* proc = ::opendir("/proc");
  while (dirent* entry = ::readdir(proc)) {
    if (std::atoi(entry->d_name) <= 0) continue;
    ++scanned;
    CHECK_FALSE(contains(read_file(std::string("/proc/") + entry->d_name + "/cmdline"), secret));
  }
  ::closedir(proc);
  CHECK(scanned > 10);
  job.signal(SIGTERM);
  CHECK(job.wait().exit_code == 143);
  CHECK(nothing_left_anywhere(tag));
}

TEST_CASE("program arguments reach remote ranks byte for byte") {
  const std::string weird =
      "a b  'c' \"d\" $(touch " + hosts().dir() + "/pwned) ; echo pwned `id` \\ $HOME * ü€ \t end";
  const ProcessResult r = run_remote({"-H", "h1,h2", rank_program(), "print:" + weird});
  INFO(r.out, r.err);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.out, "[0] rank 0: " + weird + "\n"));
  CHECK(contains(r.out, "[1] rank 1: " + weird + "\n"));
  CHECK(::access((hosts().dir() + "/pwned").c_str(), F_OK) != 0);
}

TEST_CASE("sshd killed mid-job: 'lost connection' within 15 s, exit 125, nothing left; the report says so") {
  std::string tag;
  const TempReport report;
  const FaultResult f = fault_mid_job(
      "h1:1,h2:1,h3:1", [] { hosts().kill_sshd(3); }, &tag, report.path);
  const ProcessResult& r = f.result;
  INFO(r.out, r.err);
  CHECK(f.seconds_after_fault < 15);
  CHECK(r.exit_code == 125);
  CHECK(count(r.err, "lost connection to h3") == 1);
  CHECK(contains(r.err,
                 "trainrun: lost connection to h3: the host closed the SSH connection (its sshd or this "
                 "session was killed, or the host is going down)\n"));
  CHECK(nothing_left_anywhere(tag));
  if (schema_validator_missing().empty()) {
    const nlohmann::json j = checked_report(report.path);
    CHECK(j["outcome"] == "launch_failed");
    CHECK(contains(j["failure"]["cause"].get<std::string>(), "lost connection to h3"));
    CHECK(j["ranks"][2]["state"] == "unknown");
  }
  hosts().restore(3);
}

TEST_CASE("ranks silent for longer than the silence limit: the hosts are not taken for lost") {
  // Rank 2 hangs, the others wait in an allreduce: nothing is printed for
  // 14 s, and only the agents' answers to Pings speak for the hosts.
  std::string tag;
  const ProcessResult r = run_remote(
      {"-H", "h1:2,h2:2", "--timeout", "14", "--grace", "1", rank_program(), "init", "deadlock:2", "allreduce"}, &tag);
  INFO(r.out, r.err);
  CHECK(r.exit_code == 124);
  CHECK(contains(r.err, "--timeout 14 s expired"));
  CHECK_FALSE(contains(r.err, "lost connection"));
  CHECK(nothing_left_anywhere(tag));
}

TEST_CASE("an unplugged host (no FIN): 'lost connection' within 15 s (10 idle), and its agent ends its ranks") {
  std::string tag;
  const FaultResult f = fault_mid_job(
      "h1:1,h4:1", [] { hosts().unplug(4); }, &tag);
  const ProcessResult& r = f.result;
  INFO(r.out, r.err);
  CHECK(f.seconds_after_fault < 15);
  CHECK(r.exit_code == 125);
  // Once: when it happens, not again as the job's summary (issue 23, item 10).
  CHECK(count(r.err, "lost connection to h4 (no answer for 8 s)") == 1);
  // h4's agent hears no Ping for 20 s, then ends its rank (grace 1 s).
  CHECK(nothing_left(tag, seconds(20 + 1 + 3)));
  CHECK(hosts().nothing_on_hosts(seconds(3), "trainrun"));
  hosts().restore(4);
}

TEST_CASE("trainrun doctor: the checks and the reachability matrix; exit 0 or 1") {
  const ProcessResult good = run_process(hosts().client_argv({trainrun_bin(), "doctor", "-H", "h1,h2,h3,h4"}));
  INFO(good.out, good.err);
  CHECK(good.exit_code == 0);
  CHECK(contains(good.out, "rendezvous binds " + hosts().launcher_address()));
  for (int h = 1; h <= 4; ++h) {
    const std::string name = "h" + std::to_string(h);
    CHECK(row_says(good.out, name, "connect", "ok: root@" + hosts().address(h) + ":22"));
    CHECK(row_says(good.out, name, "remote trainrun", "ok: " + trainrun_bin()));
    CHECK(row_says(good.out, name, "network", "ok: " + hosts().address(h)));
  }
  CHECK(contains(good.out, "reachability"));
  CHECK(contains(good.out, "  h2    ok          ok    -     ok    ok\n"));
  CHECK(contains(good.out, "trainrun doctor: all checks passed"));
  const ProcessResult bad = run_process(hosts().client_argv({trainrun_bin(), "doctor", "-H", "h1,refused"}));
  INFO(bad.out, bad.err);
  CHECK(bad.exit_code == 1);
  CHECK(row_says(bad.out, "refused", "connect", "connection refused"));
  CHECK(contains(bad.out, "trainrun doctor: some checks failed"));
  CHECK(hosts().nothing_on_hosts(seconds(3)));
}

TEST_CASE("--dry-run and --verbose print every network choice; a dry run starts nothing") {
  const ProcessResult dry = run_remote({"--dry-run", "-H", "h1:2,h2:2", rank_program()});
  INFO(dry.out, dry.err);
  CHECK(dry.exit_code == 0);
  CHECK(contains(dry.out, "trainrun: rendezvous binds " + hosts().launcher_address() +
                              ": the address that routes to h1 (" + hosts().address(1) + ")\n"));
  CHECK(contains(dry.out, "trainrun: each rank binds its host's address that routes to the rendezvous\n"));
  CHECK(contains(dry.out, "trainrun: MASTER_ADDR is rank 0's host h1"));
  CHECK(contains(dry.out, "trainrun: h2: ssh root@" + hosts().address(2) + ":22, runs "));
  CHECK(contains(dry.out, "'MASTER_ADDR=<rank 0'\\''s host address>'"));
  CHECK(hosts().nothing_on_hosts(milliseconds(0)));
  const ProcessResult verbose = run_remote({"--verbose", "-H", "h1,h2", "/bin/true"});
  INFO(verbose.out, verbose.err);
  CHECK(verbose.exit_code == 0);
  CHECK(contains(verbose.err, "trainrun: rendezvous binds " + hosts().launcher_address()));
  CHECK(contains(verbose.err, "trainrun: h2: root@" + hosts().address(2) + ":22, address " + hosts().address(2)));
  CHECK(contains(verbose.err, "MASTER_ADDR " + hosts().address(1) + ":"));
}

TEST_CASE("an ssh_config alias of this machine runs here, without SSH, as localhost does") {
  // ~/.ssh/config: Host loopback, HostName 127.0.0.1. The alias itself is
  // never looked up (no DNS query per host).
  const ProcessResult dry = run_remote({"--dry-run", "-H", "loopback:1,h1:1", "/bin/hostname"});
  INFO(dry.out, dry.err);
  CHECK(dry.exit_code == 0);
  CHECK_FALSE(contains(dry.out, "loopback: ssh"));
  CHECK(contains(dry.out, "trainrun: h1: ssh root@" + hosts().address(1) + ":22, runs "));
  std::string tag;
  const ProcessResult r = run_remote({"-H", "loopback:1,h1:1", "/bin/hostname"}, &tag);
  INFO(r.out, r.err);
  CHECK(r.exit_code == 0);
  char here[256] = {};
  ::gethostname(here, sizeof here - 1);
  CHECK(contains(r.out, std::string(here) + "\n"));
  CHECK(contains(r.out, "h1\n"));
  CHECK(nothing_left_anywhere(tag));
}

TEST_CASE("--network and --network-interface choose the job's network, or say why not") {
  std::string tag;
  const ProcessResult r = run_remote(
      {"--network", hosts().subnet(), "-H", "h1:1,h2:1", rank_program(), "allreduce", "env:TRAINRUN_NETWORK"}, &tag);
  INFO(r.out, r.err);
  CHECK(r.exit_code == 0);
  CHECK(count(r.out, "sum=1\n") == 2);
  CHECK(count(r.out, "TRAINRUN_NETWORK=" + hosts().subnet() + "\n") == 2);
  const ProcessResult outside = run_remote({"--network", "10.99.0.0/16", "-H", "h1", "/bin/true"});
  INFO(outside.out, outside.err);
  CHECK(outside.exit_code == 2);
  CHECK(contains(outside.err, "trainrun: error: --network 10.99.0.0/16: no address in network 10.99.0.0/16"));
  // The bridge exists here, not on the hosts: each host says so.
  const ProcessResult interface = run_remote({"--network-interface", hosts().bridge(), "-H", "h1,h2", "/bin/true"});
  INFO(interface.out, interface.err);
  CHECK(interface.exit_code == 125);
  CHECK(row_says(interface.err, "h2", "network", "no interface '" + hosts().bridge() + "'"));
  CHECK(nothing_left_anywhere(tag));
}

int main(int argc, char** argv) { return run_with_ssh_hosts(argc, argv, g_hosts); }
