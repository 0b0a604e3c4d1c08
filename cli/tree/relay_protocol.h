// What a launcher asks of a relay agent in a tree of agents (the Relay
// frame) and what the relay answers once it has started the hosts below it
// (RelayReady): the same SSH choices and pre-flight questions the launcher
// would use itself, the block of hosts, the tree's radix; every check made
// and every host's probe answer, in the block's order. Pure encodings; no I/O.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/agent/host_probe.h"
#include "cli/plan/rank_plan.h"
#include "cli/plan/remote_options.h"
#include "cli/ssh/check_table.h"

namespace trainrun::cli {

struct RelayRequest {
  RemoteOptions options;
  ProbeRequest probe;
  std::vector<HostSlots> hosts;  // the relay's block: its whole subtree
  std::size_t radix = 1;
};

struct RelayReport {
  bool ok = false;                   // every host of the block passed and its agent runs
  std::vector<CheckRow> rows;        // every check made below the relay
  std::vector<ProbeAnswer> answers;  // when ok: one per host of the block, in order
};

std::string encode_relay_request(const RelayRequest& request);
std::optional<RelayRequest> decode_relay_request(std::string_view payload);
std::string encode_relay_report(const RelayReport& report);
std::optional<RelayReport> decode_relay_report(std::string_view payload);

}  // namespace trainrun::cli
