#include "cli/plan/rank_plan.h"

#include <algorithm>
#include <cstdio>

#include "contract/world.h"

namespace trainrun::cli {

namespace {

// The host of each rank, in rank order.
std::vector<int> rank_hosts(const std::vector<HostSlots>& hosts, int np, MapBy map_by) {
  std::vector<int> host_of;
  host_of.reserve(static_cast<std::size_t>(np));
  if (map_by == MapBy::Slot) {
    for (std::size_t h = 0; h < hosts.size(); ++h) {
      for (int s = 0; s < hosts[h].slots && static_cast<int>(host_of.size()) < np; ++s) {
        host_of.push_back(static_cast<int>(h));
      }
    }
    return host_of;
  }
  for (int round = 0; static_cast<int>(host_of.size()) < np; ++round) {
    bool any = false;
    for (std::size_t h = 0; h < hosts.size() && static_cast<int>(host_of.size()) < np; ++h) {
      if (hosts[h].slots > round) host_of.push_back(static_cast<int>(h)), any = true;
    }
    if (!any) break;  // np above the slots: the caller's error
  }
  return host_of;
}

}  // namespace

std::vector<RankSlot> plan_ranks(const std::vector<HostSlots>& hosts, int np, MapBy map_by) {
  const std::vector<int> host_of = rank_hosts(hosts, np, map_by);
  std::vector<int> used(hosts.size(), 0);
  for (int h : host_of) ++used[static_cast<std::size_t>(h)];
  std::vector<int> next_local(hosts.size(), 0);
  std::vector<RankSlot> plan;
  plan.reserve(host_of.size());
  for (int h : host_of) {
    RankSlot slot;
    slot.rank = static_cast<int>(plan.size());
    slot.host_index = h;
    slot.host = hosts[static_cast<std::size_t>(h)].host;
    slot.local_rank = next_local[static_cast<std::size_t>(h)]++;
    slot.local_size = used[static_cast<std::size_t>(h)];
    std::tie(slot.cross_rank, slot.cross_size) = detail::cross_rank_and_size(used, h, slot.local_rank);
    plan.push_back(slot);
  }
  return plan;
}

std::string rank_map_row(const RankSlot& slot) {
  char row[96];
  std::snprintf(row, sizeof row, "%4d  %-16s  %2d/%-2d  %2d/%-2d  ", slot.rank, slot.host.c_str(), slot.local_rank,
                slot.local_size, slot.cross_rank, slot.cross_size);
  return row;
}

std::string rank_map(const std::vector<RankSlot>& ranks, std::size_t hosts) {
  std::string text = "trainrun: rank map: " + std::to_string(ranks.size()) + " rank(s) on " + std::to_string(hosts) +
                     " host(s)\n" + kRankMapHeader + "\n";
  for (const RankSlot& slot : ranks) {
    const std::string row = rank_map_row(slot);
    text += row.substr(0, row.find_last_not_of(' ') + 1) + "\n";
  }
  return text;
}

}  // namespace trainrun::cli
