// Two-level allreduce for jobs on several hosts that each run the same
// number of ranks L: shared memory in a host (backends/shm), the TCP mesh
// among the ranks at the same position on every host (the "cross" mesh).
// Which variant runs is a matter of size (contract/switch_points.h):
//   leader (below points.split_min): a shared-memory allreduce, then local
//     rank 0 alone allreduces the host sum across hosts and broadcasts the
//     result in shared memory: the link carries it once;
//   replicated (below points.leader_min, only by override): as leader, but
//     every local rank carries the host sum across, with no broadcast;
//   split: shared-memory reduce-scatter, so local rank i holds block i of
//     its host's sum; block i is allreduced across hosts by the ranks at
//     position i (all L streams of a host at once, each 1/L of the data);
//     a shared-memory allgather. It runs in chunks of points.chunk_bytes
//     as a pipeline: chunk k+1's reduce-scatter and chunk k-1's allgather
//     happen while chunk k is on the wire (SocketMesh::stream), so the
//     link does not wait for shared memory. Between 2 hosts a chunk's
//     piece goes to the counterpart whole; among more, round a ring of the
//     counterparts whose steps for every chunk make one stream each way
//     (blocks shorter than cross_ring_min: recursive doubling, unchunked).
// Every element is summed in the same order wherever it ends up (local
// rank order, then host order), so all ranks get the same bits.
#pragma once

#include <cstddef>
#include <vector>

#include "backends/tcp/socket_mesh.h"
#include "backends/reduction.h"
#include "backends/shm/shm_collectives.h"
#include "contract/switch_points.h"

namespace trainrun::detail {

// Short messages: the host's ranks wait for each other's network round
// yielding the CPU for up to 1 ms instead of 50 us before they sleep; a
// futex wake-up on every call cost 100-200 us per allreduce between 2
// hosts x 2 ranks (bimodal 40 / 150-280 us p50 at 16 B - 16 KiB). Long
// ones keep the short phase (their rounds take longer than any spin).
void spin_for_network_round(ShmCollectives& host, std::size_t bytes);

// send may equal recv. `block` and `scratch` are reusable buffers.
void two_level_allreduce(ShmCollectives& host, SocketMesh& cross, const SwitchPoints& points, const void* send,
                         void* recv, std::size_t count, std::size_t element, ReduceFn reduce, std::vector<char>& block,
                         std::vector<char>& scratch);

}  // namespace trainrun::detail
