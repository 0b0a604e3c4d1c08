// The two-level allreduce (shared memory within a host, TCP between hosts)
// on 2 network-namespace hosts x 2 ranks (tests/integration/ssh_hosts.h):
// with the data plane between the hosts cut (iptables on h2 drops what h1
// sends; the launcher stays reachable), the ranks waiting in its TCP phase
// must say so every --stall-warning interval, naming the remote rank and
// its host, and --stacks-on-stall must fire. Exits 77 (skip) with the
// reason when the hosts cannot be made or iptables or eu-stack is missing.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <unistd.h>

#include <csignal>
#include <iostream>
#include <sstream>

#include "tests/integration/ssh_hosts.h"
#include "tests/integration/ssh_test_main.h"
#include "tests/integration/trainrun_runner.h"

using namespace trainrun::test;
using std::chrono::seconds;

namespace {

SshHosts* g_hosts = nullptr;

// Lines of `err` by rank on host `from` that say it waits for a rank on host `to`.
int waits_for(const std::string& err, const std::string& from, const std::string& to) {
  std::istringstream lines(err);
  int n = 0;
  for (std::string line; std::getline(lines, line);) {
    if (contains(line, " (" + from + "): waiting: allreduce (core call #") &&
        contains(line, " (" + to + ", " + g_hosts->address(to == "h1" ? 1 : 2) + "); still waiting")) {
      ++n;
    }
  }
  return n;
}

// h2 drops every packet from h1 while it lives.
class Cut {
 public:
  Cut() { CHECK(std::system(rule("-A").c_str()) == 0); }
  ~Cut() { std::system(rule("-D").c_str()); }

 private:
  static std::string rule(const char* action) {
    return "ip netns exec " + g_hosts->netns(2) + " iptables " + action + " INPUT -s " + g_hosts->address(1) +
           " -j DROP";
  }
};

}  // namespace

TEST_CASE("data plane cut between 2 hosts mid two-level allreduce: 'waiting:' names the remote rank and host") {
  ProcessOptions options;
  options.env = {unique_tag()};
  const std::string tag = options.env.front();
  Child job(g_hosts->client_argv({trainrun_bin(), "-x", tag, "-x", "TRAINRUN_COLLECTIVE_TIMEOUT=600", "-H", "h1:2,h2:2",
                                  "--stall-warning", "1", "--stacks-on-stall", program_path("ELASTIC_PROGRAM"),
                                  "--steps", "1000000", "--mb", "4"}),
            options);
  REQUIRE(job.wait_for_output("] step 20 size 4", std::chrono::minutes(2)));
  {
    const Cut cut;
    // Both sides of the cut wait in the TCP phase; a few intervals are enough.
    job.wait_for_output("the output a test never sees", seconds(6));
    job.signal(SIGTERM);
  }
  const ProcessResult r = job.wait();
  INFO(r.err);
  CHECK(waits_for(r.err, "h1", "h2") >= 2);
  CHECK(waits_for(r.err, "h2", "h1") >= 2);
  CHECK(contains(r.err, "trainrun: a stall warning (--stacks-on-stall): taking the stack of every rank\n"));
  CHECK(contains(r.err, "trainrun: stacks of every rank (a stall warning (--stacks-on-stall)), "));
  CHECK(nothing_left(tag, seconds(10)));
  CHECK(g_hosts->nothing_on_hosts(seconds(10)));
}

int main(int argc, char** argv) {
  for (const char* tool : {"/usr/sbin/iptables", "/usr/bin/eu-stack"}) {
    if (::access(tool, X_OK) != 0) {
      std::cout << "SKIP: no " << tool << " (Debian/Ubuntu: scripts/setup.sh installs it)\n";
      return 77;
    }
  }
  return run_with_ssh_hosts(argc, argv, g_hosts);
}
