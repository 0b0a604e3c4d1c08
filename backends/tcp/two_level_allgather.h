// Two-level allgatherv for jobs on several hosts that each run the same
// number of ranks L, numbered host by host (host h has ranks h*L..h*L+L-1):
// the ranks at one local position exchange their own blocks across hosts
// over the cross mesh (each link carries every block of its host once, as
// the flat ring cannot: its crossing edges carry (N-1)/N of everything),
// then each host's ranks share the blocks over shared memory, one host's
// blocks at a time. Between 2 hosts this host's blocks are shared while
// the exchange is on the wire (SocketMesh::stream). `replicated` (short
// messages, as allreduce's switch points say): the host's blocks are
// shared first and every local rank carries all of them across, which
// saves the second shared-memory round. Not thread-safe.
#pragma once

#include <cstddef>
#include <vector>

#include "backends/tcp/socket_mesh.h"
#include "backends/shm/shm_collectives.h"

namespace trainrun::detail {

// In place: this rank's block already sits at its offset in recv; counts by job rank.
void two_level_allgatherv(ShmCollectives& host, SocketMesh& cross, void* recv, const std::vector<std::size_t>& counts,
                          std::size_t element, bool replicated);

}  // namespace trainrun::detail
