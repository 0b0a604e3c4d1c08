#include "cli/elastic/membership.h"

#include <algorithm>

#include "cli/plan/rank_plan.h"

namespace trainrun::cli::elastic {

elastic_protocol::Assignment assign(int generation, const std::vector<std::string>& host_order,
                                    std::vector<Member> members) {
  auto host_index = [&](const std::string& host) {
    return std::find(host_order.begin(), host_order.end(), host) - host_order.begin();
  };
  std::sort(members.begin(), members.end(), [&](const Member& a, const Member& b) {
    const auto ha = host_index(a.host), hb = host_index(b.host);
    return ha != hb ? ha < hb : a.worker < b.worker;
  });
  // One HostSlots per host in use, as many slots as it has members.
  std::vector<HostSlots> hosts;
  for (const Member& m : members) {
    if (hosts.empty() || hosts.back().host != m.host) hosts.push_back(HostSlots{m.host, 0, ""});
    ++hosts.back().slots;
  }
  elastic_protocol::Assignment out;
  out.generation = generation;
  const std::vector<RankSlot> ranks = plan_ranks(hosts, static_cast<int>(members.size()));
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const RankSlot& r = ranks[i];
    out.slots.push_back(
        {members[i].worker, r.rank, r.local_rank, r.local_size, r.cross_rank, r.cross_size, members[i].host});
  }
  return out;
}

}  // namespace trainrun::cli::elastic
