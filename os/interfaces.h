// This machine's network interfaces and CIDR networks: which address to
// bind when the user names a network (--network 10.1.0.0/16, i.e.
// TRAINRUN_NETWORK) or an interface (--network-interface eth1). Used by the
// launcher for the rendezvous address and by every rank for its own mesh
// address, so that both sides pick the same network by the same rule.
// parse_cidr and Cidr::contains are pure; the rest read getifaddrs().
// Stateless, thread-safe.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainrun::net {

struct Cidr {
  int family = 0;  // AF_INET or AF_INET6
  std::array<unsigned char, 16> bytes{};
  int prefix = 0;  // leading bits that must match
  // Whether `address` (numeric text) lies in this network.
  bool contains(std::string_view address) const;
};

// "10.1.0.0/16", "fd00::/8"; a bare address means its /32 or /128.
std::optional<Cidr> parse_cidr(std::string_view text);

struct InterfaceAddress {
  std::string interface;
  std::string address;
};

// Addresses of the interfaces that are up, IPv4 first.
std::vector<InterfaceAddress> interface_addresses();

// This machine's address in network `cidr`; throws Error(InvalidArgument)
// naming the network and the addresses the machine has.
std::string address_in_network(const std::string& cidr);

// The address of interface `name` (IPv4 preferred); throws
// Error(InvalidArgument) naming the interfaces the machine has.
std::string interface_address(const std::string& name);

}  // namespace trainrun::net
