// The host-list grammar shared by -H/--hosts and --hostfile. Pure: text in,
// hosts out, or an error that quotes the bad token (escaped, cut at
// kEchoBytes: cli/plan/printable.h) and where it was.
//   -H:        host[:slots],user@host[:slots],[ipv6]:slots
//   hostfile:  one host per line: "host", "host:N", "host slots=N",
//              "[ipv6] slots=N", and Open MPI's keys: count=N (slots),
//              max_slots=N (also max-slots, slots_max, slots-max; only
//              checked: trainrun never starts more than `slots` ranks on a
//              host; alone it sets slots, as in Open MPI); '#' starts a
//              comment; blank lines, CRLF line ends and a UTF-8 BOM are fine.
// Every host is checked here, before any SSH code sees it: a DNS name or
// IPv4 address (letters, digits, '-', '.', '_'; at most 253 characters,
// labels at most 63; no leading '-'), or an IPv6 address (inet_pton, with an
// optional %zone), bracketed when slots follow. User names: letters, digits,
// '-', '.', '_', no leading '-'. A host listed twice is merged (slots add up).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "cli/plan/rank_plan.h"

namespace trainrun::cli {

// What a hostfile may hold; the reader (read_text_file) stops past the first.
inline constexpr std::size_t kMaxHostfileBytes = 1u << 20;
inline constexpr std::size_t kMaxHostfileLine = 4096;

struct HostListResult {
  std::vector<HostSlots> hosts;
  std::string error;  // empty on success
  bool ok() const { return error.empty(); }
};

// `default_slots`: a host given without any (horovodrun's --slots-per-host).
HostListResult parse_host_option(std::string_view text, int default_slots = 1);
// `origin` names the file in errors ("hosts.txt:3: ...").
HostListResult parse_hostfile(std::string_view content, std::string_view origin, int default_slots = 1);

// "user@host" or "host": how a host appears in messages.
std::string display_name(const HostSlots& host);
// The hosts as -H text that parse_host_option reads back ("h1:2,[::1]:4").
std::string host_option_text(const std::vector<HostSlots>& hosts);

}  // namespace trainrun::cli
