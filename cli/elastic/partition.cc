#include "cli/elastic/partition.h"

#include <algorithm>
#include <map>

namespace trainrun::cli::elastic {
namespace {

bool cut(const std::set<std::pair<std::string, std::string>>& cuts, const std::string& a, const std::string& b) {
  return cuts.count({a, b}) > 0 || cuts.count({b, a}) > 0;
}

}  // namespace

std::optional<PartitionDecision> resolve_partition(const std::vector<Member>& members,
                                                   const std::set<std::pair<std::string, std::string>>& cuts,
                                                   int min_np) {
  std::vector<std::string> hosts;  // first rank first
  std::map<std::string, int> workers;
  for (const Member& m : members) {
    if (workers[m.host]++ == 0) hosts.push_back(m.host);
  }
  // Sides in the order of their first host, so side 0 holds rank 0.
  std::map<std::string, int> side_of;
  std::vector<PartitionSide> sides;
  for (const std::string& start : hosts) {
    if (side_of.count(start)) continue;
    const int side = static_cast<int>(sides.size());
    sides.emplace_back();
    std::vector<std::string> todo{start};
    side_of[start] = side;
    while (!todo.empty()) {
      const std::string host = todo.back();
      todo.pop_back();
      sides[side].hosts.push_back(host);
      sides[side].workers += workers[host];
      for (const std::string& other : hosts) {
        if (side_of.count(other) || cut(cuts, host, other)) continue;
        side_of[other] = side;
        todo.push_back(other);
      }
    }
  }
  if (sides.size() < 2) return std::nullopt;
  for (PartitionSide& s : sides) {
    std::sort(s.hosts.begin(), s.hosts.end(), [&](const std::string& a, const std::string& b) {
      return std::find(hosts.begin(), hosts.end(), a) < std::find(hosts.begin(), hosts.end(), b);
    });
  }
  // The first of the largest: ties go to the side with the lowest rank.
  std::size_t best = 0;
  for (std::size_t i = 1; i < sides.size(); ++i) {
    if (sides[i].workers > sides[best].workers) best = i;
  }
  if (sides[best].workers < min_np) return std::nullopt;
  PartitionDecision decision;
  decision.keep = sides[best];
  for (std::size_t i = 0; i < sides.size(); ++i) {
    if (i == best) continue;
    decision.tie = decision.tie || sides[i].workers == sides[best].workers;
    decision.drop.push_back(sides[i]);
  }
  return decision;
}

}  // namespace trainrun::cli::elastic
