// The c10d ops trainrun's core has no single call for, composed from its
// calls (integrations/python/core/core_group.h) so that no collective is implemented
// twice. Stateless; run on a process group's worker thread. Tensors are
// CPU tensors of a core type (checked by the caller); a tensor that is not
// contiguous is worked on as a contiguous copy and written back. An
// expanded tensor (stride 0 along a dimension, as from expand()) is an
// input as its contiguous copy; in place (allreduce, broadcast, reduce) it
// keeps one element for every position along that dimension, and gets the
// result's first there (what Gloo leaves in it). The caller refuses an
// expanded output of the ops below that fill every element separately.
#pragma once

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <vector>

#include "integrations/python/core/core_group.h"

namespace trainrun::c10d {

using python::CoreGroup;

// In place; every ReduceOp but PREMUL_SUM (BAND/BOR/BXOR: an allgather,
// then torch's bitwise fold, in rank order).
void allreduce_tensor(CoreGroup& g, at::Tensor& t, ::c10d::ReduceOp::RedOpType op);
// Every tensor in place through one flat buffer (one core call).
void allreduce_tensors(CoreGroup& g, std::vector<at::Tensor>& tensors, ::c10d::ReduceOp::RedOpType op);
void broadcast_tensor(CoreGroup& g, at::Tensor& t, int root);
// Only `root`'s tensor gets the result; the others are left as they were.
// The core's reduce (BAND/BOR/BXOR: allreduce_tensor's fold).
void reduce_tensor(CoreGroup& g, at::Tensor& t, int root, ::c10d::ReduceOp::RedOpType op);
// Every rank's `in` (flat, contiguous; counts[r] elements from rank r) end
// to end, in a new tensor: one core allgather when the counts are equal,
// else allgatherv.
at::Tensor allgather_concat(CoreGroup& g, const at::Tensor& in, const std::vector<std::size_t>& counts);
// outputs[r] = rank r's input; sizes may differ (allgatherv).
void allgather_list(CoreGroup& g, std::vector<at::Tensor>& outputs, const at::Tensor& input);
// outputs[r] (a list per rank) = rank r's inputs, through one core call on
// the concatenation of every input (allgatherv when the ranks' totals
// differ): rank r's elements fill outputs[r]'s tensors in order.
void allgather_coalesced_lists(CoreGroup& g, std::vector<std::vector<at::Tensor>>& outputs,
                               const std::vector<at::Tensor>& inputs);
// `output` holds size() inputs end to end.
void allgather_flat(CoreGroup& g, at::Tensor& output, const at::Tensor& input);
// On `root`, outputs[r] = rank r's input (elsewhere outputs is empty).
void gather_list(CoreGroup& g, std::vector<at::Tensor>& outputs, const at::Tensor& input, int root);
// output = root's inputs[rank()] (inputs is empty off the root).
void scatter_list(CoreGroup& g, at::Tensor& output, const std::vector<at::Tensor>& inputs, int root);
// output = the reduction of every rank's input block rank() (input holds size() blocks).
void reduce_scatter_flat(CoreGroup& g, at::Tensor& output, const at::Tensor& input, ::c10d::ReduceOp::RedOpType op);
// Block r of input (input_counts[r] elements) to rank r; block r of output
// (output_counts[r]) from rank r. Equal counts run as one core alltoall;
// others pad every block to the largest any rank sends. Counts that do not
// match the senders' throw on every rank, naming both ranks and sizes.
void alltoall_flat(CoreGroup& g, at::Tensor& output, const at::Tensor& input,
                   const std::vector<std::size_t>& output_counts, const std::vector<std::size_t>& input_counts);

}  // namespace trainrun::c10d
