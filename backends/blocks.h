// How the CPU collectives lay a vector out in one block per rank: an even
// split of a count, and the byte offsets of blocks of given counts. Pure.
#pragma once

#include <cstddef>
#include <vector>

namespace trainrun::detail {

// `count` elements in `parts` blocks whose sizes differ by at most one.
inline std::vector<std::size_t> even_blocks(std::size_t count, int parts) {
  std::vector<std::size_t> counts(static_cast<std::size_t>(parts));
  for (int b = 0; b < parts; ++b) counts[b] = count * (b + 1) / parts - count * b / parts;
  return counts;
}

// Byte offsets of the blocks, one more than there are blocks (the last is the total).
inline std::vector<std::size_t> block_offsets(const std::vector<std::size_t>& counts, std::size_t element) {
  std::vector<std::size_t> offsets(counts.size() + 1, 0);
  for (std::size_t i = 0; i < counts.size(); ++i) offsets[i + 1] = offsets[i] + counts[i] * element;
  return offsets;
}

}  // namespace trainrun::detail
