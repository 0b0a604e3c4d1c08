#include "os/interfaces.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <algorithm>
#include <charconv>

#include "trainrun/error.h"

namespace trainrun::net {
namespace {

std::optional<Cidr> parse_address(std::string_view text) {
  const std::string address(text);
  Cidr cidr;
  if (::inet_pton(AF_INET, address.c_str(), cidr.bytes.data()) == 1) {
    cidr.family = AF_INET;
    cidr.prefix = 32;
  } else if (::inet_pton(AF_INET6, address.c_str(), cidr.bytes.data()) == 1) {
    cidr.family = AF_INET6;
    cidr.prefix = 128;
  } else {
    return std::nullopt;
  }
  return cidr;
}

// "10.0.0.2 on eth0, fd00::2 on eth0" for error messages.
std::string address_list() {
  std::string text;
  for (const InterfaceAddress& a : interface_addresses()) {
    text += (text.empty() ? "" : ", ") + a.address + " on " + a.interface;
  }
  return text.empty() ? "none" : text;
}

}  // namespace

std::optional<Cidr> parse_cidr(std::string_view text) {
  const std::size_t slash = text.find('/');
  std::optional<Cidr> cidr = parse_address(text.substr(0, slash));
  if (!cidr || slash == std::string_view::npos) return cidr;
  const std::string_view bits = text.substr(slash + 1);
  int prefix = -1;
  const auto r = std::from_chars(bits.data(), bits.data() + bits.size(), prefix);
  if (bits.empty() || r.ec != std::errc() || r.ptr != bits.data() + bits.size() || prefix < 0 ||
      prefix > cidr->prefix) {
    return std::nullopt;
  }
  cidr->prefix = prefix;
  return cidr;
}

bool Cidr::contains(std::string_view address) const {
  const std::optional<Cidr> other = parse_address(address);
  if (!other || other->family != family) return false;
  for (int bit = 0; bit < prefix; ++bit) {
    const int byte = bit / 8, mask = 0x80 >> (bit % 8);
    if ((bytes[byte] & mask) != (other->bytes[byte] & mask)) return false;
  }
  return true;
}

std::vector<InterfaceAddress> interface_addresses() {
  std::vector<InterfaceAddress> v4, v6;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return v4;
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || !(i->ifa_flags & IFF_UP)) continue;
    char text[INET6_ADDRSTRLEN] = {};
    if (i->ifa_addr->sa_family == AF_INET) {
      ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr, text, sizeof text);
      v4.push_back({i->ifa_name, text});
    } else if (i->ifa_addr->sa_family == AF_INET6) {
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(i->ifa_addr);
      // Link-local addresses need a scope id that peers cannot use as is.
      if (IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr)) continue;
      ::inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
      v6.push_back({i->ifa_name, text});
    }
  }
  ::freeifaddrs(list);
  v4.insert(v4.end(), v6.begin(), v6.end());
  return v4;
}

std::string address_in_network(const std::string& cidr_text) {
  const std::optional<Cidr> cidr = parse_cidr(cidr_text);
  if (!cidr) {
    throw Error(Error::Code::InvalidArgument, "'" + cidr_text + "' is not a network like 10.1.0.0/16");
  }
  for (const InterfaceAddress& a : interface_addresses()) {
    if (cidr->contains(a.address)) return a.address;
  }
  throw Error(Error::Code::InvalidArgument,
              "no address in network " + cidr_text + " (addresses: " + address_list() + ")");
}

std::string interface_address(const std::string& name) {
  const std::vector<InterfaceAddress> all = interface_addresses();
  const auto it = std::find_if(all.begin(), all.end(), [&](const InterfaceAddress& a) { return a.interface == name; });
  if (it != all.end()) return it->address;
  std::vector<std::string> seen;
  std::string names;
  for (const InterfaceAddress& a : all) {
    if (std::find(seen.begin(), seen.end(), a.interface) != seen.end()) continue;
    seen.push_back(a.interface);
    names += (names.empty() ? "" : ", ") + a.interface;
  }
  throw Error(Error::Code::InvalidArgument,
              "no interface '" + name + "' with an address that is up (interfaces: " + names + ")");
}

}  // namespace trainrun::net
