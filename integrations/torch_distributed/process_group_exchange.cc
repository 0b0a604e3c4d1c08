// ProcessGroupTrainrun's ops that move blocks between ranks (allgather,
// allgather_coalesced, gather, scatter, reduce_scatter, alltoall) and the
// point-to-point ones it refuses; the reductions, broadcast and barrier are
// in process_group.cc.
#include <string>

#include "integrations/torch_distributed/composed_collectives.h"
#include "integrations/torch_distributed/process_group.h"

namespace trainrun::c10d {

using ::c10d::OpType;
using python::CoreGroup;

namespace {

std::vector<std::size_t> counts_of(const std::vector<at::Tensor>& tensors) {
  std::vector<std::size_t> counts;
  for (const at::Tensor& t : tensors) counts.push_back(static_cast<std::size_t>(t.numel()));
  return counts;
}

}  // namespace

ProcessGroupTrainrun::Tensors ProcessGroupTrainrun::rank_list(const char* op, std::vector<Tensors>& lists,
                                                              const at::Tensor& like, const char* what,
                                                              bool same_size) const {
  if (lists.size() != 1 || lists[0].size() != static_cast<std::size_t>(size_)) {
    refuse(op, "needs one list of " + std::to_string(size_) + " " + what + " tensors");
  }
  for (std::size_t r = 0; r < lists[0].size(); ++r) {
    const at::Tensor& t = lists[0][r];
    check_tensor(op, t);
    if (what[0] == 'o') check_writable(op, t, "output tensor " + std::to_string(r));
    if (t.scalar_type() != like.scalar_type() || (same_size && t.numel() != like.numel())) {
      refuse(op, std::string("every ") + what + " tensor must have the " + (same_size ? "size and " : "") +
                     "dtype of " + (what[0] == 'o' ? "the input" : "the output"));
    }
  }
  return lists[0];
}

ProcessGroupTrainrun::Tensors ProcessGroupTrainrun::root_list(const char* op, std::vector<Tensors>& lists,
                                                              const at::Tensor& like, const char* what,
                                                              int root) const {
  if (rank_ == root) return rank_list(op, lists, like, what, true);
  if (!lists.empty() && !lists[0].empty()) {
    refuse(op, "only the root (rank " + std::to_string(root) + ") passes " + what + " tensors");
  }
  return {};
}

void ProcessGroupTrainrun::check_blocks(const char* op, const at::Tensor& block, const at::Tensor& all,
                                        const char* all_name) const {
  check_tensor(op, block);
  check_tensor(op, all);
  if (block.scalar_type() != all.scalar_type()) refuse(op, "output and input must have one dtype");
  if (all.numel() != block.numel() * size_) {
    refuse(op, std::string("the ") + all_name + " has " + std::to_string(all.numel()) + " elements, not " +
                   std::to_string(size_) + " x " + std::to_string(block.numel()));
  }
}

ProcessGroupTrainrun::WorkPtr ProcessGroupTrainrun::allgather(std::vector<Tensors>& outputs, Tensors& inputs,
                                                              const ::c10d::AllgatherOptions& /*opts*/) {
  const char* op = "allgather";
  at::Tensor in = single(op, inputs);
  Tensors out = rank_list(op, outputs, in, "output", false);
  if (out[rank_].numel() != in.numel()) {
    refuse(op, "output tensor " + std::to_string(rank_) + " has " + std::to_string(out[rank_].numel()) +
                   " elements, the input " + std::to_string(in.numel()));
  }
  return enqueue(OpType::ALLGATHER, op, out, [out, in](CoreGroup& g) mutable { allgather_list(g, out, in); }, {in});
}

ProcessGroupTrainrun::WorkPtr ProcessGroupTrainrun::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                                    const ::c10d::AllgatherOptions& /*opts*/) {
  const char* op = "_allgather_base";
  check_blocks(op, input, output, "output");
  check_writable(op, output, "the output tensor");
  at::Tensor out = output, in = input;
  return enqueue(OpType::_ALLGATHER_BASE, op, {out}, [out, in](CoreGroup& g) mutable { allgather_flat(g, out, in); },
                 {in});
}

// Rank r's inputs, end to end, fill output list r in order: output list
// r may have its own shapes (rank r's), as allgather's tensors may.
ProcessGroupTrainrun::WorkPtr ProcessGroupTrainrun::allgather_coalesced(std::vector<Tensors>& outputs, Tensors& inputs,
                                                                        const ::c10d::AllgatherOptions& /*opts*/) {
  const char* op = "allgather_coalesced";
  if (inputs.empty()) refuse(op, "no input tensors");
  for (const at::Tensor& t : inputs) {
    check_tensor(op, t);
    if (t.scalar_type() != inputs[0].scalar_type()) refuse(op, "the input tensors must all have one dtype");
  }
  if (outputs.size() != static_cast<std::size_t>(size_)) {
    refuse(op,
           "needs " + std::to_string(size_) + " output lists (one per rank), got " + std::to_string(outputs.size()));
  }
  Tensors all_outputs;
  for (std::size_t r = 0; r < outputs.size(); ++r) {
    const std::string list = "output list " + std::to_string(r);
    if (outputs[r].size() != inputs.size()) {
      refuse(op, list + " has " + std::to_string(outputs[r].size()) + " tensors, the input list " +
                     std::to_string(inputs.size()));
    }
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const at::Tensor& o = outputs[r][i];
      const std::string what = list + "'s tensor " + std::to_string(i);
      check_tensor(op, o);
      check_writable(op, o, what);
      if (o.scalar_type() != inputs[0].scalar_type()) refuse(op, what + " must have the inputs' dtype");
      if (r == static_cast<std::size_t>(rank_) && o.numel() != inputs[i].numel()) {
        refuse(op, what + " (this rank's) has " + std::to_string(o.numel()) + " elements, input tensor " +
                       std::to_string(i) + " " + std::to_string(inputs[i].numel()));
      }
      all_outputs.push_back(o);
    }
  }
  return enqueue(
      OpType::ALLGATHER_COALESCED, op, all_outputs,
      [lists = outputs, inputs](CoreGroup& g) mutable { allgather_coalesced_lists(g, lists, inputs); }, inputs);
}

ProcessGroupTrainrun::WorkPtr ProcessGroupTrainrun::gather(std::vector<Tensors>& outputs, Tensors& inputs,
                                                           const ::c10d::GatherOptions& opts) {
  const char* op = "gather";
  at::Tensor in = single(op, inputs);
  check_root(op, opts.rootRank);
  const int root = static_cast<int>(opts.rootRank);
  Tensors out = root_list(op, outputs, in, "output", root);
  return enqueue(OpType::GATHER, op, out, [out, in, root](CoreGroup& g) mutable { gather_list(g, out, in, root); },
                 {in});
}

ProcessGroupTrainrun::WorkPtr ProcessGroupTrainrun::scatter(Tensors& outputs, std::vector<Tensors>& inputs,
                                                            const ::c10d::ScatterOptions& opts) {
  const char* op = "scatter";
  at::Tensor out = single(op, outputs);
  check_writable(op, out, "the output tensor");
  check_root(op, opts.rootRank);
  const int root = static_cast<int>(opts.rootRank);
  Tensors in = root_list(op, inputs, out, "input", root);
  return enqueue(
      OpType::SCATTER, op, {out}, [out, in, root](CoreGroup& g) mutable { scatter_list(g, out, in, root); }, in);
}

ProcessGroupTrainrun::WorkPtr ProcessGroupTrainrun::reduce_scatter(Tensors& outputs, std::vector<Tensors>& inputs,
                                                                   const ::c10d::ReduceScatterOptions& opts) {
  const char* op = "reduce_scatter";
  at::Tensor out = single(op, outputs);
  check_writable(op, out, "the output tensor");
  check_reduce(op, out, opts.reduceOp);
  std::vector<at::Tensor> parts;
  for (const at::Tensor& i : rank_list(op, inputs, out, "input", true)) parts.push_back(i.reshape(-1));
  const at::Tensor in = at::cat(parts);
  const auto reduce_op = opts.reduceOp.op_;
  return enqueue(OpType::REDUCE_SCATTER, op, {out},
                 [out, in, reduce_op](CoreGroup& g) mutable { reduce_scatter_flat(g, out, in, reduce_op); }, {in});
}

ProcessGroupTrainrun::WorkPtr ProcessGroupTrainrun::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                         const ::c10d::ReduceScatterOptions& opts) {
  const char* op = "_reduce_scatter_base";
  check_blocks(op, output, input, "input");
  check_writable(op, output, "the output tensor");
  check_reduce(op, output, opts.reduceOp);
  at::Tensor out = output, in = input;
  const auto reduce_op = opts.reduceOp.op_;
  return enqueue(OpType::_REDUCE_SCATTER_BASE, op, {out},
                 [out, in, reduce_op](CoreGroup& g) mutable { reduce_scatter_flat(g, out, in, reduce_op); }, {in});
}

// Splits count rows (dim 0); empty splits mean equal blocks.
ProcessGroupTrainrun::WorkPtr ProcessGroupTrainrun::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                                  std::vector<int64_t>& output_splits,
                                                                  std::vector<int64_t>& input_splits,
                                                                  const ::c10d::AllToAllOptions& /*opts*/) {
  const char* op = "alltoall_base";
  check_tensor(op, output);
  check_tensor(op, input);
  check_writable(op, output, "the output tensor");
  if (output.scalar_type() != input.scalar_type()) refuse(op, "output and input must have one dtype");
  auto counts = [&](const at::Tensor& t, const std::vector<int64_t>& splits, const char* which) {
    const int64_t rows = t.dim() == 0 ? 1 : t.size(0);
    const int64_t row = rows == 0 ? 0 : t.numel() / rows;
    std::vector<std::size_t> c(static_cast<std::size_t>(size_));
    if (splits.empty()) {
      if (rows % size_ != 0)
        refuse(op, std::string(which) + " dim 0 (" + std::to_string(rows) + ") does not divide by the group size " +
                       std::to_string(size_));
      for (auto& x : c) x = static_cast<std::size_t>(rows / size_ * row);
      return c;
    }
    if (splits.size() != c.size()) refuse(op, std::string(which) + " splits need one entry per rank");
    int64_t sum = 0;
    for (std::size_t r = 0; r < c.size(); ++r) {
      if (splits[r] < 0) refuse(op, std::string(which) + " splits must not be negative");
      c[r] = static_cast<std::size_t>(splits[r] * row);
      sum += splits[r];
    }
    if (sum != rows)
      refuse(op, std::string(which) + " splits sum to " + std::to_string(sum) + ", not dim 0 (" + std::to_string(rows) +
                     ")");
    return c;
  };
  const std::vector<std::size_t> out_counts = counts(output, output_splits, "output");
  const std::vector<std::size_t> in_counts = counts(input, input_splits, "input");
  at::Tensor out = output, in = input;
  return enqueue(OpType::ALLTOALL_BASE, op, {out},
                 [=](CoreGroup& g) mutable { alltoall_flat(g, out, in, out_counts, in_counts); }, {in});
}

ProcessGroupTrainrun::WorkPtr ProcessGroupTrainrun::alltoall(Tensors& outputs, Tensors& inputs,
                                                             const ::c10d::AllToAllOptions& /*opts*/) {
  const char* op = "alltoall";
  if (outputs.size() != static_cast<std::size_t>(size_) || inputs.size() != outputs.size()) {
    refuse(op, "needs " + std::to_string(size_) + " input and " + std::to_string(size_) + " output tensors");
  }
  std::vector<at::Tensor> in_parts;
  for (std::size_t r = 0; r < inputs.size(); ++r) {
    check_tensor(op, inputs[r]);
    check_tensor(op, outputs[r]);
    check_writable(op, outputs[r], "output tensor " + std::to_string(r));
    if (inputs[r].scalar_type() != inputs[0].scalar_type() || outputs[r].scalar_type() != inputs[0].scalar_type()) {
      refuse(op, "every tensor must have one dtype");
    }
    in_parts.push_back(inputs[r].reshape(-1));
  }
  const at::Tensor in = at::cat(in_parts);
  const std::vector<std::size_t> out_counts = counts_of(outputs), in_counts = counts_of(inputs);
  Tensors out = outputs;
  return enqueue(OpType::ALLTOALL, op, out,
                 [=](CoreGroup& g) mutable {
                   int64_t total = 0;
                   for (const at::Tensor& o : out) total += o.numel();
                   at::Tensor flat_out = at::empty({total}, in.options());
                   alltoall_flat(g, flat_out, in, out_counts, in_counts);
                   int64_t offset = 0;
                   for (at::Tensor& o : out) {
                     o.copy_(flat_out.narrow(0, offset, o.numel()).view(o.sizes()));
                     offset += o.numel();
                   }
                 },
                 {in});
}

}  // namespace trainrun::c10d
