#include "integrations/torch_distributed/composed_collectives.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "integrations/torch_distributed/core_types.h"
#include "integrations/torch_distributed/ordered_worker.h"

namespace trainrun::c10d {
namespace {

using RedOp = ::c10d::ReduceOp;

// Writes `result` (`target`'s shape) into `target`; where `target` is
// expanded, each of its elements once: the first of the result along each
// expanded dimension (copy_ refuses a target whose elements share memory).
void write_back(at::Tensor& target, const at::Tensor& result) {
  at::Tensor to = target;
  at::Tensor from = result;
  for (std::int64_t d = 0; d < target.dim(); ++d) {
    if (target.stride(d) == 0 && target.size(d) > 1) {
      to = to.narrow(d, 0, 1);
      from = from.narrow(d, 0, 1);
    }
  }
  to.copy_(from);
}

// A contiguous tensor to work on in place of `target`; commit() writes it
// back when it is a copy.
struct Dense {
  explicit Dense(at::Tensor& t) : target(t), work(t.contiguous()) {}
  void commit() {
    if (!work.is_same(target)) write_back(target, work);
  }
  at::Tensor& target;
  at::Tensor work;
};

DataType type_of(const at::Tensor& t) { return *core_type(t.scalar_type()); }
std::size_t count_of(const at::Tensor& t) { return static_cast<std::size_t>(t.numel()); }
std::int64_t dim(std::size_t n) { return static_cast<std::int64_t>(n); }

at::Tensor bitwise(const at::Tensor& a, const at::Tensor& b, RedOp::RedOpType op) {
  if (op == RedOp::BAND) return at::bitwise_and(a, b);
  if (op == RedOp::BOR) return at::bitwise_or(a, b);
  return at::bitwise_xor(a, b);
}

// The flat (1-D) contiguous form of `t`'s elements.
at::Tensor flat(const at::Tensor& t) { return t.contiguous().view(-1); }

}  // namespace

void allreduce_tensor(CoreGroup& g, at::Tensor& t, RedOp::RedOpType op) {
  Dense d(t);
  const std::size_t n = count_of(d.work);
  if (reduce_kind(op) == ReduceKind::Core) {
    g.allreduce(d.work.data_ptr(), d.work.data_ptr(), n, type_of(t), core_op(op));
  } else {
    at::Tensor all = at::empty({g.size(), dim(n)}, d.work.options());
    g.allgather(d.work.data_ptr(), all.data_ptr(), n, type_of(t));
    at::Tensor folded = all[0];
    for (int r = 1; r < g.size(); ++r) folded = bitwise(folded, all[r], op);
    d.work.view(-1).copy_(folded);
  }
  d.commit();
}

void allreduce_tensors(CoreGroup& g, std::vector<at::Tensor>& tensors, RedOp::RedOpType op) {
  std::vector<at::Tensor> parts;
  parts.reserve(tensors.size());
  for (const at::Tensor& t : tensors) parts.push_back(t.reshape(-1));
  at::Tensor all = at::cat(parts);
  allreduce_tensor(g, all, op);
  std::int64_t offset = 0;
  for (at::Tensor& t : tensors) {
    write_back(t, all.narrow(0, offset, t.numel()).view(t.sizes()));
    offset += t.numel();
  }
}

void broadcast_tensor(CoreGroup& g, at::Tensor& t, int root) {
  Dense d(t);
  g.broadcast(d.work.data_ptr(), count_of(d.work), type_of(t), root);
  d.commit();
}

void reduce_tensor(CoreGroup& g, at::Tensor& t, int root, RedOp::RedOpType op) {
  const bool at_root = g.rank() == root;
  if (reduce_kind(op) != ReduceKind::Core) {  // a bitwise fold: allreduce_tensor's, kept at the root
    at::Tensor result = t.clone(at::MemoryFormat::Contiguous);
    allreduce_tensor(g, result, op);
    if (at_root) write_back(t, result);
    return;
  }
  Dense d(t);
  g.reduce(d.work.data_ptr(), at_root ? d.work.data_ptr() : nullptr, count_of(d.work), type_of(t), core_op(op), root);
  if (at_root) d.commit();
}

at::Tensor allgather_concat(CoreGroup& g, const at::Tensor& in, const std::vector<std::size_t>& counts) {
  std::size_t total = 0;
  for (std::size_t c : counts) total += c;
  at::Tensor all = at::empty({dim(total)}, in.options());
  if (std::all_of(counts.begin(), counts.end(), [&](std::size_t c) { return c == counts[0]; })) {
    g.allgather(in.data_ptr(), all.data_ptr(), count_of(in), type_of(in));
  } else {
    g.allgatherv(in.data_ptr(), count_of(in), all.data_ptr(), counts, type_of(in));
  }
  return all;
}

namespace {

// Fills `outputs` with the consecutive pieces of `all` from `offset` on;
// returns the offset after them.
std::int64_t split_into(const at::Tensor& all, std::int64_t offset, std::vector<at::Tensor>& outputs) {
  for (at::Tensor& o : outputs) {
    o.copy_(all.narrow(0, offset, o.numel()).view(o.sizes()));
    offset += o.numel();
  }
  return offset;
}

std::size_t total_count(const std::vector<at::Tensor>& tensors) {
  std::size_t n = 0;
  for (const at::Tensor& t : tensors) n += count_of(t);
  return n;
}

}  // namespace

void allgather_list(CoreGroup& g, std::vector<at::Tensor>& outputs, const at::Tensor& input) {
  std::vector<std::size_t> counts;
  for (const at::Tensor& o : outputs) counts.push_back(count_of(o));
  split_into(allgather_concat(g, flat(input), counts), 0, outputs);
}

void allgather_coalesced_lists(CoreGroup& g, std::vector<std::vector<at::Tensor>>& outputs,
                               const std::vector<at::Tensor>& inputs) {
  std::vector<at::Tensor> parts;
  parts.reserve(inputs.size());
  for (const at::Tensor& t : inputs) parts.push_back(t.reshape(-1));
  const at::Tensor in = at::cat(parts);
  std::vector<std::size_t> counts;
  for (const std::vector<at::Tensor>& list : outputs) counts.push_back(total_count(list));
  const at::Tensor all = allgather_concat(g, in, counts);
  std::int64_t offset = 0;
  for (std::vector<at::Tensor>& list : outputs) offset = split_into(all, offset, list);
}

void allgather_flat(CoreGroup& g, at::Tensor& output, const at::Tensor& input) {
  Dense d(output);
  const at::Tensor in = flat(input);
  g.allgather(in.data_ptr(), d.work.data_ptr(), count_of(in), type_of(in));
  d.commit();
}

void gather_list(CoreGroup& g, std::vector<at::Tensor>& outputs, const at::Tensor& input, int root) {
  const at::Tensor in = flat(input);
  at::Tensor all = at::empty({g.size(), in.numel()}, in.options());
  g.allgather(in.data_ptr(), all.data_ptr(), count_of(in), type_of(in));
  if (g.rank() != root) return;
  for (int r = 0; r < g.size(); ++r) outputs[r].copy_(all[r].view(outputs[r].sizes()));
}

void scatter_list(CoreGroup& g, at::Tensor& output, const std::vector<at::Tensor>& inputs, int root) {
  const std::int64_t n = output.numel();
  at::Tensor all = at::empty({g.size(), n}, output.options().memory_format(at::MemoryFormat::Contiguous));
  if (g.rank() == root) {
    for (int r = 0; r < g.size(); ++r) all[r].copy_(inputs[r].reshape(-1));
  }
  g.broadcast(all.data_ptr(), count_of(all), type_of(output), root);
  output.copy_(all[g.rank()].view(output.sizes()));
}

void reduce_scatter_flat(CoreGroup& g, at::Tensor& output, const at::Tensor& input, RedOp::RedOpType op) {
  Dense d(output);
  const std::size_t n = count_of(d.work);
  if (reduce_kind(op) == ReduceKind::Core) {
    const at::Tensor in = flat(input);
    g.reducescatter(in.data_ptr(), d.work.data_ptr(), n, type_of(in), core_op(op));
  } else {
    at::Tensor all = input.reshape(-1).clone();
    allreduce_tensor(g, all, op);
    d.work.view(-1).copy_(all.narrow(0, dim(n) * g.rank(), dim(n)));
  }
  d.commit();
}

namespace {

// Every rank's counts, sent and expected, so that every rank takes the same
// path (the largest block any rank sends; whether every block everywhere
// is that) and finds the same disagreement: rank s sending n elements to
// rank r, which expects m, is an error on every rank naming both, before
// any element moves.
std::int64_t agreed_block(CoreGroup& g, const std::vector<std::size_t>& output_counts,
                          const std::vector<std::size_t>& input_counts, bool& equal) {
  const std::size_t size = static_cast<std::size_t>(g.size());
  std::vector<std::int64_t> mine;
  for (std::size_t c : input_counts) mine.push_back(dim(c));
  for (std::size_t c : output_counts) mine.push_back(dim(c));
  std::vector<std::int64_t> all(2 * size * size);
  g.allgather(mine.data(), all.data(), mine.size(), DataType::Int64);
  auto sends = [&](std::size_t from, std::size_t to) { return all[from * 2 * size + to]; };
  auto expects = [&](std::size_t at, std::size_t from) { return all[at * 2 * size + size + from]; };
  for (std::size_t from = 0; from < size; ++from) {
    for (std::size_t to = 0; to < size; ++to) {
      if (sends(from, to) != expects(to, from)) {
        throw AgreedError("split sizes disagree: rank " + std::to_string(from) + " sends " +
                          std::to_string(sends(from, to)) + " elements to rank " + std::to_string(to) +
                          ", which expects " + std::to_string(expects(to, from)) + " (nothing was sent)");
      }
    }
  }
  const auto [low, high] = std::minmax_element(all.begin(), all.end());
  equal = *low == *high;
  return *high;
}

}  // namespace

void alltoall_flat(CoreGroup& g, at::Tensor& output, const at::Tensor& input,
                   const std::vector<std::size_t>& output_counts, const std::vector<std::size_t>& input_counts) {
  bool equal = false;
  const std::int64_t block = agreed_block(g, output_counts, input_counts, equal);
  if (block == 0) return;
  Dense d(output);
  const at::Tensor in = flat(input);
  if (equal) {
    g.alltoall(in.data_ptr(), d.work.data_ptr(), static_cast<std::size_t>(block), type_of(in));
    return d.commit();
  }
  const int size = g.size();
  at::Tensor send = at::zeros({size, block}, in.options());
  at::Tensor recv = at::empty({size, block}, in.options());
  std::int64_t offset = 0;
  for (int r = 0; r < size; ++r) {
    const std::int64_t n = dim(input_counts[r]);
    send[r].narrow(0, 0, n).copy_(in.narrow(0, offset, n));
    offset += n;
  }
  g.alltoall(send.data_ptr(), recv.data_ptr(), static_cast<std::size_t>(block), type_of(in));
  at::Tensor out = d.work.view(-1);
  offset = 0;
  for (int r = 0; r < size; ++r) {
    const std::int64_t n = dim(output_counts[r]);
    out.narrow(0, offset, n).copy_(recv[r].narrow(0, 0, n));
    offset += n;
  }
  d.commit();
}

}  // namespace trainrun::c10d
