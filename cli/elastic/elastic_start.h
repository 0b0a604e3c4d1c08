// What an elastic job decides before anything starts: the flags checked
// against each other and the rest of the command line, the hosts it may
// use now (-H/--hostfile/--local, or the discovery script's first answer,
// waiting up to --elastic-timeout for --min-np slots), and the number of
// ranks it starts with. Then, once the supervisor exists, the driver
// (cli/elastic/elastic_driver.h).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/elastic/elastic_driver.h"
#include "cli/elastic/host_discovery.h"
#include "cli/plan/options.h"

namespace trainrun::cli::elastic {

struct ElasticStart {
  DriverOptions driver;
  std::vector<HostSlots> hosts;              // every slot usable now
  std::unique_ptr<HostDiscovery> discovery;  // null without --host-discovery-script
  HostSource* source = nullptr;              // the discovery script, the launch mode's hosts, or none
};

// Sets options.np, options.min_np and options.max_np, and options.hosts from
// the discovery script. `from_mode`: the hosts a launch mode gives (a
// per-node launch's nodes) instead of -H, --hostfile or a script. On
// failure prints one error line (and the script's stderr), sets *exit_code
// (2: usage, 125: the script failed or too few slots) and *error_line, and
// returns nullopt.
std::optional<ElasticStart> prepare_elastic(Options& options, std::string* error_line, int* exit_code,
                                            HostSource* from_mode = nullptr);

}  // namespace trainrun::cli::elastic
