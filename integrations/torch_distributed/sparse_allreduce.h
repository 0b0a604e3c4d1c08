// The allreduce (SUM) of a sparse COO tensor, composed from the core's
// calls as torch's Gloo does it (docs/design.md §11, composed_collectives.h):
// every rank's indices and values are gathered to every rank and summed
// there. Three core calls: an allgather of each rank's description (dtype,
// sizes, sparse dimensions, number of nonzeros), then an allgatherv of the
// indices and one of the values (each rank's own count). The sum is Gloo's:
// a sparse tensor per rank, added in rank order, coalesced; it replaces the
// tensor's contents (copy_), so every rank ends with the same coalesced
// tensor. Run on a process group's worker thread; the tensor is a COO
// tensor of a core type on the CPU or CUDA (checked by the caller).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

#include "integrations/python/core/core_group.h"

namespace trainrun::c10d {

// Dimensions (sparse and dense together) a sparse tensor may have here:
// each rank's description is one fixed-size block of the first allgather.
inline constexpr std::int64_t kMaxSparseTensorDims = 16;

// Tensors whose dtype or sizes differ between ranks throw AgreedError on
// every rank, naming the first rank that differs from rank 0 and both
// tensors, before any index or value moved; so does a dtype torch cannot
// add sparse tensors of, after the core calls (every rank holds the same
// parts then). Either way the group goes on.
void allreduce_sparse_sum(python::CoreGroup& g, at::Tensor& t);

}  // namespace trainrun::c10d
