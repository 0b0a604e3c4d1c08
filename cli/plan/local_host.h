// Whether a host name means this machine: "localhost", a loopback address,
// this machine's hostname, or an address of one of its interfaces. Reads
// the interface list and resolves names (getaddrinfo); thread-safe.
#pragma once

#include <string>

namespace trainrun::cli {

bool is_local_host(const std::string& host);
std::string this_host_name();

}  // namespace trainrun::cli
