// Which side of a network partition an elastic job keeps. While their
// collectives are stuck, workers report the workers of other hosts they
// cannot connect to (lib/elastic/peer_probe.h); two hosts are cut when
// either reported the other. The sides are the groups of hosts still
// connected (connected components of the hosts not cut from each other).
// The side that goes on has the most workers, ties broken by the side
// holding the lowest rank; when it has fewer than --min-np, or nothing is
// cut into two sides, there is no decision. Pure.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cli/elastic/membership.h"

namespace trainrun::cli::elastic {

struct PartitionSide {
  std::vector<std::string> hosts;  // in the order of the members
  int workers = 0;
};

struct PartitionDecision {
  PartitionSide keep;
  std::vector<PartitionSide> drop;
  bool tie = false;  // `keep` won on holding the lowest rank, not on size
};

// `members`: the generation's workers in rank order; `cuts`: host pairs that
// cannot reach each other (either order).
std::optional<PartitionDecision> resolve_partition(const std::vector<Member>& members,
                                                   const std::set<std::pair<std::string, std::string>>& cuts,
                                                   int min_np);

}  // namespace trainrun::cli::elastic
