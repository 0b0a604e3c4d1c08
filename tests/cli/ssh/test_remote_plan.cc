#include <doctest/doctest.h>

#include <iterator>

#include "cli/plan/options.h"
#include "cli/ssh/remote_plan.h"
#include "contract/environment.h"
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
  CHECK(network.rank_env() == EnvList{{trainrun::contract::kEnvNetwork, "127.0.0.0/8"}});
  CHECK(network.choices()[0] == "rendezvous binds 127.0.0.1: this machine's address in --network 127.0.0.0/8");
  CHECK(network.probe("/").network == "127.0.0.0/8");
  options.remote.network.clear();
  options.remote.network_interface = "lo";
  const RemotePlan interface(local_plan(), options);
  CHECK(interface.rank_env() == EnvList{{trainrun::contract::kEnvIface, "lo"}});
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

TEST_CASE("the multi-host options parse, and --network excludes --network-interface") {
  const char* args[] = {"trainrun",
                        "-p",
                        "2222",
                        "-i",
                        "/k",
                        "--ssh-connect-timeout",
                        "3",
                        "--ssh-accept-new",
                        "--remote-trainrun",
                        "/opt/trainrun",
                        "--network",
                        "10.1.0.0/16",
                        "-H",
                        "a,b",
                        "./p",
                        "-p",
                        "1"};
  const ParseResult r = parse_options(static_cast<int>(std::size(args)), args);
  REQUIRE(r.exit_code == -1);
  CHECK(r.options.remote.ssh_port == 2222);
  CHECK(r.options.remote.ssh_identity_file == "/k");
  CHECK(r.options.remote.ssh_connect_timeout_s == 3);
  CHECK(r.options.remote.ssh_accept_new);
  CHECK(r.options.remote.remote_trainrun == "/opt/trainrun");
  CHECK(r.options.remote.network == "10.1.0.0/16");
  CHECK(r.options.command == std::vector<std::string>{"./p", "-p", "1"});
  const char* both[] = {"trainrun", "--network", "10.1.0.0/16", "--network-interface", "eth1", "./p"};
  CHECK(parse_options(static_cast<int>(std::size(both)), both).exit_code == 2);
  const char* bad_port[] = {"trainrun", "-p", "70000", "./p"};
  CHECK(parse_options(static_cast<int>(std::size(bad_port)), bad_port).exit_code == 2);
}

namespace {

// `count` remote hosts (TEST-NET-3 addresses, 203.0.113.0/24), one slot each.
JobPlan remote_plan(int count) {
  JobPlan plan;
  for (int i = 1; i <= count; ++i) plan.hosts.push_back({"203.0.113." + std::to_string(i), 1, ""});
  plan.ranks = plan_ranks(plan.hosts, count);
  return plan;
}

}  // namespace

TEST_CASE("a tree of agents above 128 remote hosts, or at --tree-radix; never in an elastic job") {
  Options options = with_program();
  try {
    const RemotePlan flat(remote_plan(128), options);
    REQUIRE(flat.remote_hosts().size() == 128);  // none of them is this machine
    CHECK(flat.tree_radix() > 128);
    CHECK_FALSE(flat.is_relayed(127));
  } catch (const trainrun::Error& e) {
    if (e.code() == trainrun::Error::Code::Unsupported) return;  // built without libssh: no remote hosts
    throw;
  }
  const RemotePlan automatic(remote_plan(129), options);
  CHECK(automatic.tree_radix() == 64);
  CHECK_FALSE(automatic.is_relayed(63));
  CHECK(automatic.is_relayed(64));
  options.remote.tree_radix = 2;
  const RemotePlan chosen(remote_plan(4), options);
  CHECK(chosen.tree_radix() == 2);
  CHECK(chosen.is_relayed(2));
  bool says_so = false;
  for (const std::string& line : chosen.choices()) {
    says_so = says_so || line ==
                             "agents start as a tree of radix 2: trainrun reaches the first 2 remote hosts, they "
                             "start the other 2 (--tree-radix)";
  }
  CHECK(says_so);
  options.remote.tree_radix = 0;
  options.min_np = 1;  // elastic: every host reached by trainrun itself
  const RemotePlan elastic(remote_plan(129), options);
  CHECK_FALSE(elastic.is_relayed(128));
}
