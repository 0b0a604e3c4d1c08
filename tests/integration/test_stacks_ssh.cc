// Every rank's stack across hosts: the agents on network-namespace SSH
// hosts (tests/integration/ssh_hosts.h) take their ranks' stacks and the
// launcher groups them with the host names. Exits 77 (skip) with the
// reason when the hosts cannot be made or eu-stack is missing.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <unistd.h>

#include <iostream>
#include <memory>

#include "tests/integration/ssh_hosts.h"
#include "tests/integration/ssh_test_main.h"
#include "tests/integration/trainrun_runner.h"

using namespace trainrun::test;
using std::chrono::seconds;

namespace {

SshHosts* g_hosts = nullptr;

}  // namespace

TEST_CASE("--timeout on 2 hosts: the deadlocked rank on h2 apart from the others on h1 and h2") {
  const std::string tag = unique_tag();
  ProcessOptions options;
  options.env.push_back(tag);
  const ProcessResult r =
      // The flat TCP mesh (--switch-points two-level=never): every waiting
      // rank waits in the same place, on either host, so their stacks group.
      run_process(g_hosts->client_argv({trainrun_bin(), "-x", tag, "-H", "h1:2,h2:2", "--timeout", "10", "--grace", "1",
                                        "--switch-points", "two-level=never", rank_program(), "init", "deadlock:2",
                                        "allreduce"}),
                  options);
  INFO(r.out, r.err);
  CHECK(r.exit_code == 124);
  CHECK(contains(r.err, "trainrun: stacks of every rank (--timeout 10 s expired), 2 groups:\n"));
  CHECK(contains(r.err, "\nranks 0-1,3 (h1, h2):\n"));
  const std::size_t locked = r.err.find("\nrank 2 (h2):\n");
  REQUIRE(locked != std::string::npos);
  const std::string rest = r.err.substr(locked);
  CHECK((contains(rest, "pthread_mutex_lock") || contains(rest, "__lll_lock_wait")));
  CHECK(r.seconds < 60);
  CHECK(nothing_left(tag, seconds(5)));
  CHECK(g_hosts->nothing_on_hosts(seconds(5)));
}

int main(int argc, char** argv) {
  if (::access("/usr/bin/eu-stack", X_OK) != 0) {
    std::cout << "SKIP: no /usr/bin/eu-stack (Debian/Ubuntu: apt-get install elfutils)\n";
    return 77;
  }
  return run_with_ssh_hosts(argc, argv, g_hosts);
}
