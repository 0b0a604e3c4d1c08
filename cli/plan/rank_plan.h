// Rank planning: which rank runs on which host, with its local and cross
// rank (Horovod's definitions). Pure, no I/O.
#pragma once

#include <string>
#include <vector>

namespace trainrun::cli {

struct HostSlots {
  std::string host;   // name or address (IPv6 without brackets)
  int slots = 1;
  std::string user;   // from "user@host"; empty: the default
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

// Fills hosts in order; np must not exceed the total slots (checked by the
// caller, which knows how to word the error). np ranks in the result.
std::vector<RankSlot> plan_ranks(const std::vector<HostSlots>& hosts, int np);

}  // namespace trainrun::cli
