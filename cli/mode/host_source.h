// HostSource: where an elastic job learns which hosts it may use now and
// what each offers: a discovery script polled in the background
// (cli/elastic/host_discovery.h) or the nodes that have joined a per-node
// launch (cli/node/node_server.h). The elastic driver reads it every turn
// of the supervisor's loop. Thread-safety is the implementation's to say.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli/plan/rank_plan.h"

namespace trainrun::cli {

class HostSource {
 public:
  virtual ~HostSource() = default;
  // The hosts usable now, with their slots.
  virtual std::vector<HostSlots> hosts() const = 0;
  // +1 each time hosts() changes.
  virtual std::uint64_t version() const = 0;
  // A failure to report once (the script failed), or nullopt.
  virtual std::optional<std::string> take_failure() = 0;
  // The line saying why `host`, which the job used, is gone from hosts().
  virtual std::string gone(const std::string& host) const = 0;
};

}  // namespace trainrun::cli
