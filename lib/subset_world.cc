#include "lib/subset_world.h"

#include <algorithm>
#include <functional>

#include "trainrun/error.h"

namespace trainrun::detail {
namespace {

[[noreturn]] void invalid(const std::string& message) { throw Error(Error::Code::InvalidArgument, message); }

std::string list_text(const std::vector<int>& ranks) {
  std::string text;
  for (int r : ranks) text += (text.empty() ? "" : ", ") + std::to_string(r);
  return "[" + text + "]";
}

// FNV-1a over the bytes: the same on every machine, unlike std::hash.
std::uint64_t digest(const void* data, std::size_t bytes) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::size_t i = 0; i < bytes; ++i) h = (h ^ static_cast<const unsigned char*>(data)[i]) * 1099511628211ull;
  return h;
}

}  // namespace

std::vector<int> checked_subset(std::vector<int> ranks, int size) {
  if (ranks.empty()) invalid("a process set needs at least one rank");
  std::sort(ranks.begin(), ranks.end());
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= size) {
      invalid("rank " + std::to_string(ranks[i]) + " of process set " + list_text(ranks) + " is not a rank of this " +
              std::to_string(size) + "-rank communicator");
    }
    if (i > 0 && ranks[i] == ranks[i - 1]) {
      invalid("rank " + std::to_string(ranks[i]) + " appears twice in process set " + list_text(ranks));
    }
  }
  return ranks;
}

SubsetRecord subset_record(const std::vector<int>& ranks, const std::string& hostname, std::uint64_t ordinal) {
  return {SubsetRecord::kMagic, digest(ranks.data(), ranks.size() * sizeof(int)),
          digest(hostname.data(), hostname.size()), ordinal};
}

void check_subset_agrees(const std::vector<SubsetRecord>& records, const World& parent) {
  // Ranks grouped by a key of their record, groups in order of first rank.
  using Groups = std::vector<std::pair<std::uint64_t, std::vector<int>>>;
  auto group_by = [&](std::uint64_t SubsetRecord::*key) {
    Groups groups;
    for (std::size_t r = 0; r < records.size(); ++r) {
      const std::uint64_t k = records[r].*key;
      auto g = std::find_if(groups.begin(), groups.end(), [&](const auto& entry) { return entry.first == k; });
      if (g == groups.end()) g = groups.insert(groups.end(), {k, {}});
      g->second.push_back(parent.job_rank(static_cast<int>(r)));
    }
    return groups;
  };
  auto ranks_text = [](const std::vector<int>& ranks) {
    std::string text;
    for (int r : ranks) text += (text.empty() ? "" : ", ") + std::to_string(r);
    return (ranks.size() == 1 ? "rank " : "ranks ") + text;
  };
  const std::string order = " (every rank must make the same process sets in the same order)";
  std::vector<int> strangers;
  for (const auto& [magic, ranks] : group_by(&SubsetRecord::magic)) {
    if (magic != SubsetRecord::kMagic) strangers.insert(strangers.end(), ranks.begin(), ranks.end());
  }
  if (!strangers.empty()) {
    std::sort(strangers.begin(), strangers.end());
    throw Error(Error::Code::Mismatch, ranks_text(strangers) + " made another collective call where the others " +
                                           "asked for a process set" + order);
  }
  const Groups ordinals = group_by(&SubsetRecord::ordinal);
  if (ordinals.size() > 1) {
    std::string text;
    for (const auto& [ordinal, ranks] : ordinals) {
      text += (text.empty() ? "" : ", ") + ranks_text(ranks) + " made " + std::to_string(ordinal);
    }
    throw Error(Error::Code::Mismatch, "process sets made before this one: " + text + order);
  }
  const Groups asked = group_by(&SubsetRecord::ranks_digest);
  if (asked.size() > 1) {
    std::string text;
    for (const auto& [digest, ranks] : asked) {
      text +=
          text.empty() ? ranks_text(ranks) + " asked for one set of ranks" : ", " + ranks_text(ranks) + " for another";
    }
    throw Error(Error::Code::Mismatch, text + " (every rank must pass the same ranks, in the same order of calls)");
  }
}

std::optional<World> subset_world(const World& parent, const std::vector<int>& ranks,
                                  const std::vector<SubsetRecord>& records, const std::string& set) {
  const auto at = std::find(ranks.begin(), ranks.end(), parent.rank);
  if (at == ranks.end()) return std::nullopt;
  World world = parent;
  world.rank = static_cast<int>(at - ranks.begin());
  world.size = static_cast<int>(ranks.size());
  world.members.clear();
  for (int r : ranks) world.members.push_back(parent.job_rank(r));
  world.set = set;
  // Hosts in order of their first member; this rank's place on its host.
  std::vector<std::uint64_t> hosts;
  std::vector<int> per_host;
  const std::uint64_t mine = records[static_cast<std::size_t>(parent.rank)].host_digest;
  world.local_rank = 0;
  for (int r : ranks) {
    const std::uint64_t host = records[static_cast<std::size_t>(r)].host_digest;
    const auto h = std::find(hosts.begin(), hosts.end(), host) - hosts.begin();
    if (h == static_cast<long>(hosts.size())) {
      hosts.push_back(host);
      per_host.push_back(0);
    }
    if (r == parent.rank) world.local_rank = per_host[h];
    ++per_host[h];
  }
  const auto my_host = std::find(hosts.begin(), hosts.end(), mine) - hosts.begin();
  world.local_size = per_host[my_host];
  world.cross_rank = 0;
  world.cross_size = 0;
  for (std::size_t h = 0; h < hosts.size(); ++h) {
    if (per_host[h] <= world.local_rank) continue;
    if (static_cast<long>(h) == my_host) world.cross_rank = world.cross_size;
    ++world.cross_size;
  }
  return world;
}

}  // namespace trainrun::detail
