// Collectives over a SocketMesh, run on the calling thread: allreduce by
// recursive doubling (short messages, with the usual fold for non-power-of-
// two sizes) or a pipelined ring (reduce-scatter then allgather, long ones),
// the ring's two halves as reducescatter and allgatherv, a broadcast down a
// binomial tree (short messages) or a pipelined chain (long ones), and a
// barrier. Every rank combines
// partial results in the same operand order (lower rank first), so all
// ranks end with bit-identical values. Not thread-safe (like the mesh).
#pragma once

#include <cstddef>
#include <vector>

#include "backends/tcp/socket_mesh.h"
#include "backends/reduction.h"

namespace trainrun::detail {

// In place: `data` holds count elements of `element` bytes. Picks the
// algorithm by size: the ring from `ring_min` bytes (0: 64 KiB, 256 KiB
// between 2 ranks).
void direct_allreduce(SocketMesh& mesh, void* data, std::size_t count, std::size_t element, ReduceFn reduce,
                      std::vector<char>& scratch, std::size_t ring_min = 0);
// send holds every rank's block (counts[r] elements each, rank by rank); recv
// gets this rank's reduced block. `work` and `scratch` are reusable buffers.
void direct_reducescatter(SocketMesh& mesh, const void* send, void* recv, const std::vector<std::size_t>& counts,
                          std::size_t element, ReduceFn reduce, std::vector<char>& work, std::vector<char>& scratch);
// In place: this rank's block already sits at its offset in recv.
void direct_allgatherv(SocketMesh& mesh, void* recv, const std::vector<std::size_t>& counts, std::size_t element);
void direct_broadcast(SocketMesh& mesh, void* data, std::size_t bytes, int root);
void direct_barrier(SocketMesh& mesh);

}  // namespace trainrun::detail
