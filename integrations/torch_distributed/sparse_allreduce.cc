#include "integrations/torch_distributed/sparse_allreduce.h"

#include <ATen/core/LegacyTypeDispatch.h>
#include <c10/util/Exception.h>
#include <c10/util/accumulate.h>

#include <string>
#include <vector>

#include "integrations/torch_distributed/composed_collectives.h"
#include "integrations/torch_distributed/ordered_worker.h"

namespace trainrun::c10d {
namespace {

using python::CoreGroup;

// A rank's description, its row of the first allgather: dtype, sparse
// dimensions, nonzeros, dimensions, then the sizes (zero past the last).
enum Field : std::int64_t { kDtype, kSparseDims, kNnz, kDims, kSizes };
constexpr std::int64_t kRow = kSizes + kMaxSparseTensorDims;

std::vector<std::int64_t> describe(const at::Tensor& t) {
  std::vector<std::int64_t> row(kRow, 0);
  row[kDtype] = static_cast<std::int64_t>(t.scalar_type());
  row[kSparseDims] = t.sparse_dim();
  row[kNnz] = t._nnz();
  row[kDims] = t.dim();
  for (std::int64_t d = 0; d < t.dim(); ++d) row[kSizes + d] = t.size(d);
  return row;
}

// "Float [4, 3] with 1 sparse dimension", from a row.
std::string shape_text(const std::int64_t* row) {
  std::string sizes;
  for (std::int64_t d = 0; d < row[kDims]; ++d) sizes += (d ? ", " : "") + std::to_string(row[kSizes + d]);
  const std::int64_t sparse = row[kSparseDims];
  return std::string(c10::toString(static_cast<c10::ScalarType>(row[kDtype]))) + " [" + sizes + "] with " +
         std::to_string(sparse) + " sparse dimension" + (sparse == 1 ? "" : "s");
}

// Every rank compares every row with rank 0's, so all find the same fault.
void check_agreed(const std::vector<std::int64_t>& rows, int size) {
  for (int r = 1; r < size; ++r) {
    const std::int64_t* row = rows.data() + r * kRow;
    for (std::int64_t f = 0; f < kRow; ++f) {
      if (f == kNnz || row[f] == rows[f]) continue;
      throw AgreedError("the ranks' sparse tensors disagree: rank 0's is " + shape_text(rows.data()) + ", rank " +
                        std::to_string(r) + "'s " + shape_text(row) + " (no index or value was sent)");
    }
  }
}

// Gloo's sum of every rank's part (`indices` and `values` hold them end to
// end): a sparse tensor per rank, added in rank order, coalesced. Every
// rank has the same parts, so a dtype torch cannot add sparse tensors of
// (Half, BFloat16 and Bool on the CPU in torch 1.13) fails on every rank
// alike, after the core calls: the group is still in step.
at::Tensor sum_of(const std::vector<std::int64_t>& rows, const at::Tensor& indices, const at::Tensor& values,
                  const at::Tensor& like) {
  const std::int64_t sparse_dims = like.sparse_dim();
  const c10::IntArrayRef dense_sizes = like.sizes().slice(static_cast<std::size_t>(sparse_dims));
  const std::int64_t dense_numel = c10::multiply_integers(dense_sizes);
  const std::int64_t ranks = static_cast<std::int64_t>(rows.size()) / kRow;
  at::Tensor sum;
  std::int64_t index_at = 0, value_at = 0;
  try {
    for (std::int64_t r = 0; r < ranks; ++r) {
      const std::int64_t nnz = rows[r * kRow + kNnz];
      std::vector<std::int64_t> value_shape{nnz};
      value_shape.insert(value_shape.end(), dense_sizes.begin(), dense_sizes.end());
      const at::Tensor part = at::sparse_coo_tensor(
          indices.narrow(0, index_at, sparse_dims * nnz).view({sparse_dims, nnz}),
          values.narrow(0, value_at, dense_numel * nnz).view(value_shape), like.sizes(), like.options());
      index_at += sparse_dims * nnz;
      value_at += dense_numel * nnz;
      sum = r == 0 ? part : sum.add_(part);
    }
    return sum.coalesce();
  } catch (const c10::Error& e) {
    throw AgreedError(std::string("torch could not sum the gathered sparse tensors: ") + e.what_without_backtrace());
  }
}

}  // namespace

void allreduce_sparse_sum(CoreGroup& g, at::Tensor& t) {
  // The tensor may require grad (a user's may; a parameter's sparse
  // gradient does not): the result replaces its data, as in the dense ops.
  at::AutoDispatchBelowAutograd below_autograd;
  const at::Tensor input = t.coalesce();
  const std::vector<std::int64_t> mine = describe(input);
  std::vector<std::int64_t> rows(static_cast<std::size_t>(g.size() * kRow));
  g.allgather(mine.data(), rows.data(), mine.size(), DataType::Int64);
  check_agreed(rows, g.size());
  const std::int64_t sparse_dims = input.sparse_dim();
  const std::int64_t dense_numel = c10::multiply_integers(input.sizes().slice(static_cast<std::size_t>(sparse_dims)));
  std::vector<std::size_t> index_counts, value_counts;
  for (int r = 0; r < g.size(); ++r) {
    const std::int64_t nnz = rows[r * kRow + kNnz];
    index_counts.push_back(static_cast<std::size_t>(sparse_dims * nnz));
    value_counts.push_back(static_cast<std::size_t>(dense_numel * nnz));
  }
  const at::Tensor indices = allgather_concat(g, input._indices().contiguous().view(-1), index_counts);
  const at::Tensor values = allgather_concat(g, input._values().contiguous().view(-1), value_counts);
  t.copy_(sum_of(rows, indices, values, input));
}

}  // namespace trainrun::c10d
