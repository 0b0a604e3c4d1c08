// Two-level reducescatter for jobs on several hosts that each run the same
// number of ranks L, numbered host by host (host h has ranks h*L..h*L+L-1,
// as two-level allgather needs). A link carries (H-1)/H of the vector
// once; the flat ring's crossing edges carry (N-1)/N of it. By size
// (points.reducescatter_split_min, contract/switch_points.h):
//   leader: the host's sum by a shared-memory allreduce; local rank 0
//     reduce-scatters it across hosts, a block per host, and shares this
//     host's block in shared memory (one flow, few rounds);
//   split: the host's ranks reduce-scatter over shared memory, so that
//     local rank i holds the host's sum of block h*L+i of every host h, and
//     the ranks at position i reduce-scatter those across hosts (L flows).
//     In chunks of points.chunk_bytes / L per rank as a pipeline: between
//     2 hosts the other host's chunk k+1 is reduced in shared memory while
//     chunk k is on the wire (SocketMesh::stream), and this host's own
//     chunk k is summed while the other host's arrives; among more, round
//     a ring whose H-1 steps for every chunk make one stream each way, this
//     host's sums of chunk k+1 made while chunk k's steps are on the wire.
// Each element is summed in local rank order, then host order. Not
// thread-safe.
#pragma once

#include <cstddef>
#include <vector>

#include "backends/tcp/socket_mesh.h"
#include "backends/reduction.h"
#include "backends/shm/shm_collectives.h"
#include "contract/switch_points.h"

namespace trainrun::detail {

// send holds every rank's block (counts[r] elements, by job rank); recv
// gets this rank's reduced block; they do not alias. `sum`, `work` and
// `scratch` are reusable buffers.
void two_level_reducescatter(ShmCollectives& host, SocketMesh& cross, const SwitchPoints& points, const void* send,
                             void* recv, const std::vector<std::size_t>& counts, std::size_t element, ReduceFn reduce,
                             std::vector<char>& sum, std::vector<char>& work, std::vector<char>& scratch);

}  // namespace trainrun::detail
