#include <doctest/doctest.h>

#include "os/interfaces.h"
#include "trainrun/error.h"

using namespace trainrun::net;

TEST_CASE("parse_cidr: IPv4 and IPv6 networks, bare addresses, and what is refused") {
  const auto v4 = parse_cidr("10.1.0.0/16");
  REQUIRE(v4);
  CHECK(v4->prefix == 16);
  CHECK(v4->contains("10.1.255.3"));
  CHECK_FALSE(v4->contains("10.2.0.1"));
  CHECK_FALSE(v4->contains("fd00::1"));
  CHECK_FALSE(v4->contains("not-an-address"));
  const auto odd = parse_cidr("10.77.0.128/25");
  REQUIRE(odd);
  CHECK(odd->contains("10.77.0.200"));
  CHECK_FALSE(odd->contains("10.77.0.127"));
  const auto v6 = parse_cidr("fd00:1::/32");
  REQUIRE(v6);
  CHECK(v6->contains("fd00:1:2::5"));
  CHECK_FALSE(v6->contains("fd00:2::5"));
  const auto host = parse_cidr("192.168.1.7");
  REQUIRE(host);
  CHECK(host->contains("192.168.1.7"));
  CHECK_FALSE(host->contains("192.168.1.8"));
  CHECK(parse_cidr("0.0.0.0/0")->contains("8.8.8.8"));
  for (const char* bad :
       {"", "10.1.0.0/", "10.1.0.0/33", "10.1.0.0/-1", "10.1.0.0/16x", "fd00::/129", "eth0", "10.1.0/16"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_cidr(bad));
  }
}

TEST_CASE("this machine's address in a network, or of an interface; errors list what there is") {
  CHECK(address_in_network("127.0.0.0/8") == "127.0.0.1");
  CHECK(interface_address("lo") == "127.0.0.1");
  try {
    address_in_network("198.51.100.0/24");
    FAIL("no error");
  } catch (const trainrun::Error& e) {
    CHECK(e.code() == trainrun::Error::Code::InvalidArgument);
    CHECK(std::string(e.what()).find("no address in network 198.51.100.0/24 (addresses: 127.0.0.1 on lo") == 0);
  }
  CHECK_THROWS_WITH(address_in_network("10.0.0.0/40"), "'10.0.0.0/40' is not a network like 10.1.0.0/16");
  try {
    interface_address("nosuch0");
    FAIL("no error");
  } catch (const trainrun::Error& e) {
    CHECK(std::string(e.what()).find("no interface 'nosuch0' with an address that is up (interfaces: lo") == 0);
  }
}
