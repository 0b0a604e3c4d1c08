// Alltoall over a SocketMesh, on the calling thread, by pairwise exchange:
// in step s (1..size-1) each rank sends its block for rank+s while it
// receives the block of rank-s, so every rank sends and receives at once
// and no rank waits on a busy one. Each receiver first learns how many
// bytes its sender will send; the ranks agree (one small allreduce) that
// every pair's counts match before any data moves, so a disagreement is
// the same Error(Mismatch) on every rank and the mesh stays in step. Like
// every SocketMesh wait, a peer's death or SocketMesh::abort() ends it.
// Not thread-safe (like the mesh).
#pragma once

#include <cstddef>
#include <vector>

#include "backends/tcp/socket_mesh.h"

namespace trainrun::detail {

// Block r of send (send_counts[r] elements of `element` bytes) goes to rank
// r; block r of recv comes from rank r. send and recv do not alias.
void direct_alltoallv(SocketMesh& mesh, const void* send, const std::vector<std::size_t>& send_counts, void* recv,
                      const std::vector<std::size_t>& recv_counts, std::size_t element, std::vector<char>& scratch);

}  // namespace trainrun::detail
