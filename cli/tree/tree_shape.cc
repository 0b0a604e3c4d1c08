#include "cli/tree/tree_shape.h"

namespace trainrun::cli {
namespace {

// Hosts [first, first + count) below `parent`: its direct children, then
// their blocks.
void place(std::size_t first, std::size_t count, int parent, std::size_t radix, std::vector<TreePlace>& out) {
  const std::size_t direct = tree_direct_count(count, radix);
  if (direct == 0) return;
  for (std::size_t c = 0; c < direct; ++c) out[first + c] = TreePlace{parent, static_cast<std::uint32_t>(c), 0, 0};
  const std::size_t rest = count - direct;
  std::size_t begin = first + direct;
  for (std::size_t c = 0; c < direct; ++c) {
    const std::size_t size = rest / direct + (c < rest % direct ? 1 : 0);
    out[first + c].block_begin = begin;
    out[first + c].block_end = begin + size;
    place(begin, size, static_cast<int>(first + c), radix, out);
    begin += size;
  }
}

}  // namespace

std::vector<TreePlace> tree_shape(std::size_t count, std::size_t radix) {
  std::vector<TreePlace> out(count);
  place(0, count, -1, radix < 1 ? 1 : radix, out);
  return out;
}

int tree_depth(std::size_t count, std::size_t radix) {
  const std::vector<TreePlace> shape = tree_shape(count, radix);
  int deepest = 0;
  std::vector<int> depth(count, 1);
  for (std::size_t i = 0; i < count; ++i) {
    if (shape[i].parent >= 0) depth[i] = depth[static_cast<std::size_t>(shape[i].parent)] + 1;
    if (depth[i] > deepest) deepest = depth[i];
  }
  return deepest;
}

}  // namespace trainrun::cli
