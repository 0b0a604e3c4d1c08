// The host-list grammar shared by -H/--hosts and --hostfile. Pure: text in,
// hosts out, or an error that quotes the bad token and where it was.
//   -H:        host[:slots],user@host[:slots],[ipv6]:slots
//   hostfile:  one host per line: "host", "host:N", "host slots=N",
//              "[ipv6] slots=N"; '#' starts a comment; blank lines and CRLF
//              line ends are fine.
// A host listed twice is merged (slots add up). Host names that start with
// '-' or contain whitespace or control characters are refused.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cli/rank_plan.h"

namespace trainrun::cli {

struct HostListResult {
  std::vector<HostSlots> hosts;
  std::string error;  // empty on success
  bool ok() const { return error.empty(); }
};

HostListResult parse_host_option(std::string_view text);
// `origin` names the file in errors ("hosts.txt:3: ...").
HostListResult parse_hostfile(std::string_view content, std::string_view origin);

// "user@host" or "host": how a host appears in messages.
std::string display_name(const HostSlots& host);

}  // namespace trainrun::cli
