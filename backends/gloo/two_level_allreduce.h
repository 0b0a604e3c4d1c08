// Two-level allreduce for jobs on several hosts that each run the same
// number of ranks L: the ranks of a host reduce-scatter over shared memory
// (backends/shm), so local rank i holds block i of its host's sum; block i
// is allreduced across hosts over the TCP mesh among the ranks at position
// i (all L streams of a host at once, each carrying 1/L of the data); the
// host's ranks then allgather the blocks over shared memory. Every element
// is summed in the same order wherever it ends up, so all ranks get the
// same bits. Below kTwoLevelMinBytes the flat mesh's recursive doubling
// (a few round trips) is used instead.
#pragma once

#include <cstddef>
#include <vector>

#include "backends/gloo/socket_mesh.h"
#include "backends/reduction.h"
#include "backends/shm/shm_collectives.h"

namespace trainrun::detail {

inline constexpr std::size_t kTwoLevelMinBytes = 64 * 1024;

// send may equal recv. `block` and `scratch` are reusable buffers.
void two_level_allreduce(ShmCollectives& host, SocketMesh& cross, const void* send, void* recv, std::size_t count,
                         std::size_t element, ReduceFn reduce, std::vector<char>& block, std::vector<char>& scratch);

}  // namespace trainrun::detail
