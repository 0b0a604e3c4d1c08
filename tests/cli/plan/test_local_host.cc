// cli/plan/local_host.h: which host names mean this machine, one at a time
// and as a list resolved at once (duplicates, order kept).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cli/plan/local_host.h"

using trainrun::cli::are_local_hosts;
using trainrun::cli::is_local_host;
using trainrun::cli::this_host_name;

TEST_CASE("local host names: localhost, the loopback, this machine's name; not a name that does not resolve") {
  CHECK(is_local_host("localhost"));
  CHECK(is_local_host("127.0.0.1"));
  CHECK(is_local_host(this_host_name()));
  CHECK_FALSE(is_local_host("no-such-host.invalid"));
  CHECK_FALSE(is_local_host("192.0.2.1"));  // TEST-NET-1: nobody's address
}

TEST_CASE("are_local_hosts answers each name in order, duplicates included, as is_local_host does") {
  const std::vector<std::string> hosts = {
      "192.0.2.1", "localhost", "no-such-host.invalid", "127.0.0.1", "192.0.2.1", this_host_name(), "localhost"};
  const std::vector<bool> local = are_local_hosts(hosts);
  REQUIRE(local.size() == hosts.size());
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    INFO(hosts[i]);
    CHECK(local[i] == is_local_host(hosts[i]));
  }
  CHECK(local == std::vector<bool>{false, true, false, true, false, true, true});
  CHECK(are_local_hosts({}).empty());
}
