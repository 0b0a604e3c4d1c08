// The world of a process set (Communicator::subset): which ranks of a
// communicator form it, checked, and what each member's World is. Pure: the
// agreement among ranks travels as SubsetRecords that the caller gathers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "contract/world.h"

namespace trainrun::detail {

// `ranks` sorted, or Error(InvalidArgument) naming the problem (empty, a
// rank outside [0, size), a rank twice).
std::vector<int> checked_subset(std::vector<int> ranks, int size);

// What each rank says when a subset is made: a digest of its ranks, of its
// host, and how many subsets it made before (all must agree but the host).
struct SubsetRecord {
  // Tells a record from the bytes of another collective call that met this
  // one (a rank that did not ask for a set at this point).
  static constexpr std::uint64_t kMagic = 0x7472'7375'6273'6574ull;  // "trsubset"
  std::uint64_t magic = kMagic;
  std::uint64_t ranks_digest = 0;
  std::uint64_t host_digest = 0;
  std::uint64_t ordinal = 0;
};
SubsetRecord subset_record(const std::vector<int>& ranks, const std::string& hostname, std::uint64_t ordinal);

// Error(Mismatch) when the ranks disagree, the same text on every rank,
// naming job ranks by what they did (none is singled out as the wrong one):
// "rank 0 made another collective call ...", "rank 0 made 1 process set(s)
// before this one, ranks 1, 2 made 2", "rank 0 asked for one set of ranks,
// ranks 1, 2 for another". `records` by rank of `parent`.
void check_subset_agrees(const std::vector<SubsetRecord>& records, const World& parent);

// The set's World for this rank, or nullopt when it is not a member: rank
// and size within the set, local and cross ranks among the members (by host
// digest, Horovod's definitions), job ranks, and the set's key name `set`.
std::optional<World> subset_world(const World& parent, const std::vector<int>& ranks,
                                  const std::vector<SubsetRecord>& records, const std::string& set);

}  // namespace trainrun::detail
