#include "cli/plan/rank_plan.h"

#include <algorithm>

#include "lib/world.h"

namespace trainrun::cli {

std::vector<RankSlot> plan_ranks(const std::vector<HostSlots>& hosts, int np) {
  std::vector<int> used(hosts.size(), 0);
  int remaining = np;
  for (std::size_t h = 0; h < hosts.size() && remaining > 0; ++h) {
    used[h] = std::min(hosts[h].slots, remaining);
    remaining -= used[h];
  }
  std::vector<RankSlot> plan;
  plan.reserve(static_cast<std::size_t>(np));
  for (std::size_t h = 0; h < hosts.size(); ++h) {
    for (int local = 0; local < used[h]; ++local) {
      RankSlot slot;
      slot.rank = static_cast<int>(plan.size());
      slot.host_index = static_cast<int>(h);
      slot.host = hosts[h].host;
      slot.local_rank = local;
      slot.local_size = used[h];
      std::tie(slot.cross_rank, slot.cross_size) =
          detail::cross_rank_and_size(used, static_cast<int>(h), local);
      plan.push_back(slot);
    }
  }
  return plan;
}

}  // namespace trainrun::cli
