// Rank planning: which rank runs on which host, with its local and cross
// rank (Horovod's definitions). Pure, no I/O.
#pragma once

#include <string>
#include <vector>

namespace trainrun::cli {

struct HostSlots {
  std::string host;  // name or address (IPv6 without brackets)
  int slots = 1;
  std::string user;  // from "user@host"; empty: the default
  // A per-node launch (cli/node): the address this host's trainrun joined
  // node 0 from. Such a host is reached there, never over SSH, and its name
  // is looked up nowhere.
  std::string joined_from;
};

struct RankSlot {
  int rank = 0;
  int host_index = 0;
  std::string host;
  int local_rank = 0;
  int local_size = 1;
  int cross_rank = 0;
  int cross_size = 1;
};

// How ranks are spread (mpirun's --map-by): Slot fills each host's slots
// before the next host (ranks 0,1 on h1, 2,3 on h2); Node deals them out
// one per host in turn, skipping full hosts (0,2 on h1, 1,3 on h2).
enum class MapBy { Slot, Node };

// np must not exceed the total slots (checked by the caller, which knows
// how to word the error). np ranks in the result, in rank order; each
// host's ranks have local ranks 0, 1, ... in rank order.
std::vector<RankSlot> plan_ranks(const std::vector<HostSlots>& hosts, int np, MapBy map_by = MapBy::Slot);

// The rank map's columns, as --dry-run prints them before each command:
// kRankMapHeader, then per rank "   0  node1              0/2    0/1   ".
inline constexpr const char* kRankMapHeader = "rank  host              local  cross";
std::string rank_map_row(const RankSlot& slot);
// mpirun's --display-map: "trainrun: rank map: N rank(s) on H host(s)",
// the header and one row per rank, each line ending in a newline.
std::string rank_map(const std::vector<RankSlot>& ranks, std::size_t hosts);

}  // namespace trainrun::cli
