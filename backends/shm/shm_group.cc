#include "backends/shm/shm_group.h"

#include <algorithm>

#include "backends/shm/shm_layout.h"
#include "rendezvous/store.h"
#include "trainrun/error.h"

namespace trainrun::detail {
namespace {

constexpr const char* kNodePrefix = "shm.node.";
constexpr const char* kSegmentPrefix = "shm.segment.";
constexpr const char* kRefused = "no ";  // a leader's answer when it has no segment

// Creates the segment (leader) or maps it (peers); the leader publishes
// either way, so that its peers never wait for a segment that will not come.
std::optional<ShmSegment> create_or_attach(rendezvous::Store& store, const std::string& scope, int rank, int leader,
                                           std::size_t bytes, std::chrono::milliseconds timeout, std::string& why) {
  const std::string key = kSegmentPrefix + std::to_string(leader);
  if (rank == leader) {
    try {
      ShmSegment segment = ShmSegment::create(bytes);
      store.set(scope, key, segment.published());
      return segment;
    } catch (const Error& e) {
      why = e.what();
      store.set(scope, key, kRefused + why);
      return std::nullopt;
    }
  }
  const std::string published = store.get(scope, key, timeout);
  if (published.rfind(kRefused, 0) == 0) {
    why = "rank " + std::to_string(leader) + " could not create it: " + published.substr(3);
    return std::nullopt;
  }
  try {
    return ShmSegment::attach(published);
  } catch (const Error& e) {
    why = e.what();
    return std::nullopt;
  }
}

// Hosts in order of their lowest rank; the rank at `index` on each, or
// nothing when the job is on one host or its hosts run different numbers.
std::vector<int> cross_ranks(const std::vector<std::string>& identities, std::size_t per_host, int index) {
  std::vector<std::string> hosts;
  std::vector<std::vector<int>> members;
  for (int r = 0; r < static_cast<int>(identities.size()); ++r) {
    const auto at = std::find(hosts.begin(), hosts.end(), identities[r]) - hosts.begin();
    if (at == static_cast<long>(hosts.size())) {
      hosts.push_back(identities[r]);
      members.emplace_back();
    }
    members[at].push_back(r);
  }
  std::vector<int> cross;
  if (hosts.size() < 2) return cross;
  for (const auto& m : members) {
    if (m.size() != per_host) return {};
    cross.push_back(m[index]);
  }
  return cross;
}

}  // namespace

std::optional<ShmAttachment> attach_host_segment(rendezvous::Store& store, const std::string& scope, int rank, int size,
                                                 const std::string& host, std::chrono::milliseconds timeout,
                                                 std::string& why) {
  // The launcher's host name too: hosts it calls different (network
  // namespaces on one kernel, as the multi-host tests make) stay apart.
  const std::string machine = shm_host_identity();
  const std::string identity = machine.empty() ? "" : machine + " " + host;
  // An unknown identity matches nobody's: this rank then shares nothing.
  store.set(scope, kNodePrefix + std::to_string(rank), identity.empty() ? "unknown " + std::to_string(rank) : identity);
  const auto identities = store.get_range(scope, kNodePrefix, 0, static_cast<std::uint64_t>(size), timeout);
  ShmAttachment attachment;
  for (int r = 0; r < size; ++r) {
    if (r == rank) attachment.index = static_cast<int>(attachment.ranks.size());
    if (identities[r] == identities[rank]) attachment.ranks.push_back(r);
  }
  if (identity.empty()) {
    why = "this host's boot id is unknown";
    return std::nullopt;
  }
  if (attachment.ranks.size() < 2) return std::nullopt;  // alone on its host: no failure, no `why`
  attachment.cross_ranks = cross_ranks(identities, attachment.ranks.size(), attachment.index);
  const ShmLayout layout{static_cast<int>(attachment.ranks.size())};
  auto segment = create_or_attach(store, scope, rank, attachment.ranks.front(), layout.total_bytes(), timeout, why);
  if (!segment) return std::nullopt;
  attachment.segment = std::move(*segment);
  return attachment;
}

}  // namespace trainrun::detail
