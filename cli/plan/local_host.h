// Whether a host name means this machine: "localhost", a loopback address,
// this machine's hostname, or an address of one of its interfaces. Reads
// the interface list and resolves names (getaddrinfo); thread-safe.
#pragma once

#include <string>
#include <vector>

namespace trainrun::cli {

bool is_local_host(const std::string& host);
// is_local_host for each of `hosts`, with the interface list read once and
// the names resolved at the same time (a resolver that drops queries costs
// its timeout once, not once per host; each distinct name once).
std::vector<bool> are_local_hosts(const std::vector<std::string>& hosts);
std::string this_host_name();

}  // namespace trainrun::cli
