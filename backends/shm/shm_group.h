// The ranks of a job that share this host, and the shared segment they
// map, found through the job's rendezvous store: every rank publishes its
// host identity (boot id and process namespace, backends/shm/shm_segment.h,
// with the host name the launcher gave it); the lowest rank of each host creates the segment and publishes how to
// open it, and the others attach. Collective: every rank of the job calls
// it at the same point of its start-up.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "backends/shm/shm_segment.h"

namespace trainrun::rendezvous {
class Store;
}

namespace trainrun::detail {

struct ShmAttachment {
  std::vector<int> ranks;  // the job's ranks on this host, ascending
  int index = 0;           // this rank's position in `ranks`
  // When the job spans hosts that all run ranks.size() ranks: the ranks at
  // this rank's position on every host, host by host (this rank among
  // them). Empty on one host, or when hosts differ.
  std::vector<int> cross_ranks;
  ShmSegment segment;
};

// Returns the attachment, or nullopt with `why` when this host's ranks
// cannot share memory (empty `why`: this rank is alone on its host). Throws Error(Timeout) when peers never publish.
std::optional<ShmAttachment> attach_host_segment(rendezvous::Store& store, const std::string& scope, int rank, int size,
                                                 const std::string& host, std::chrono::milliseconds timeout,
                                                 std::string& why);

}  // namespace trainrun::detail
