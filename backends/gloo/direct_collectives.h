// Collectives over a SocketMesh, run on the calling thread: for short
// messages a recursive-doubling allreduce (with the usual fold for
// non-power-of-two sizes), for long ones a pipelined ring (reduce-scatter
// then allgather), a binomial-tree broadcast, and a barrier. Every rank combines
// partial results in the same operand order (lower rank first), so all
// ranks end with bit-identical values. Not thread-safe (like the mesh).
#pragma once

#include <cstddef>
#include <vector>

#include "backends/gloo/socket_mesh.h"
#include "backends/reduction.h"

namespace trainrun::detail {

// In place: `data` holds count elements of `element` bytes. Picks the
// algorithm by size.
void direct_allreduce(SocketMesh& mesh, void* data, std::size_t count, std::size_t element,
                      ReduceFn reduce, std::vector<char>& scratch);
void direct_broadcast(SocketMesh& mesh, void* data, std::size_t bytes, int root);
void direct_barrier(SocketMesh& mesh);

}  // namespace trainrun::detail
