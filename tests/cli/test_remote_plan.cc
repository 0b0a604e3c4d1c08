#include <doctest/doctest.h>

#include "cli/remote_plan.h"
#include "rendezvous/protocol.h"
#include "trainrun/error.h"

using namespace trainrun::cli;

namespace {

JobPlan local_plan() {
  JobPlan plan;
  plan.hosts = {{"localhost", 2, ""}, {"127.0.0.1", 1, ""}};
  plan.ranks = plan_ranks(plan.hosts, 3);
  return plan;
}

Options with_program() {
  Options options;
  options.command = {"./train", "--epochs", "3"};
  return options;
}

}  // namespace

TEST_CASE("every host is this machine: loopback, and the ranks keep the route rule") {
  const RemotePlan plan(local_plan(), with_program());
  CHECK_FALSE(plan.any_remote());
  CHECK(plan.any_local());
  CHECK_FALSE(plan.is_remote(1));
  CHECK(plan.bind_address() == "127.0.0.1");
  CHECK(plan.rank_env().empty());
  const auto lines = plan.choices();
  REQUIRE(lines.size() == 3);
  CHECK(lines[0] == "rendezvous binds 127.0.0.1: every host is this machine");
  CHECK(lines[1] == "each rank binds its host's address that routes to the rendezvous");
  CHECK(lines[2] == "MASTER_ADDR is 127.0.0.1 (rank 0 runs on this machine)");
  const ProbeRequest probe = plan.probe("/work");
  CHECK(probe.program == "./train");
  CHECK(probe.cwd == "/work");
  CHECK(probe.rendezvous_addr == "127.0.0.1");
}

TEST_CASE("--network and --network-interface set the bind address and what every rank is told") {
  Options options = with_program();
  options.remote.network = "127.0.0.0/8";
  const RemotePlan network(local_plan(), options);
  CHECK(network.bind_address() == "127.0.0.1");
  CHECK(network.rank_env() == EnvList{{trainrun::protocol::kEnvNetwork, "127.0.0.0/8"}});
  CHECK(network.choices()[0] == "rendezvous binds 127.0.0.1: this machine's address in --network 127.0.0.0/8");
  CHECK(network.probe("/").network == "127.0.0.0/8");
  options.remote.network.clear();
  options.remote.network_interface = "lo";
  const RemotePlan interface(local_plan(), options);
  CHECK(interface.rank_env() == EnvList{{trainrun::protocol::kEnvIface, "lo"}});
  CHECK(interface.choices()[1] == "each rank binds interface lo on its host (TRAINRUN_IFACE)");
}

TEST_CASE("a network or interface this machine lacks, or an unreadable -i, is a usage error naming it") {
  Options options = with_program();
  options.remote.network = "198.51.100.0/24";
  CHECK_THROWS_WITH(RemotePlan(local_plan(), options),
                    doctest::Contains("--network 198.51.100.0/24: no address in network 198.51.100.0/24"));
  options.remote.network = "10.0.0.0/99";
  CHECK_THROWS_WITH(RemotePlan(local_plan(), options),
                    "--network 10.0.0.0/99: '10.0.0.0/99' is not a network like 10.1.0.0/16");
  options.remote.network.clear();
  options.remote.network_interface = "nosuch0";
  CHECK_THROWS_WITH(RemotePlan(local_plan(), options), doctest::Contains("--network-interface nosuch0: no interface"));
  options.remote.network_interface.clear();
  options.remote.ssh_identity_file = "/nonexistent/key";
  CHECK_THROWS_WITH(RemotePlan(local_plan(), options), "-i /nonexistent/key: No such file or directory");
}
