// The shape of a tree of agents: which host starts which. The launcher
// reaches the first `radix` hosts itself; the rest are split into as many
// contiguous blocks, as even as they can be, and the i-th direct host
// starts the agents of the i-th block the same way (its first `radix` hosts
// directly, the rest in blocks below them). A relay given a block computes
// the same shape from the block alone, so the launcher and every relay
// agree on it without sending it. Pure; no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace trainrun::cli {

struct TreePlace {
  int parent = -1;          // the index of the host that starts this one; -1: the launcher (or relay) itself
  std::uint32_t child = 0;  // this host's place among its parent's direct children
  std::size_t block_begin = 0, block_end = 0;  // the hosts it starts (indices; empty: none)
};

// One entry per host of `count`, in order; radix >= 1. Every parent comes
// before its children, and a host's block holds its whole subtree.
std::vector<TreePlace> tree_shape(std::size_t count, std::size_t radix);

// The hosts the launcher (or a relay) reaches itself: min(count, radix).
inline std::size_t tree_direct_count(std::size_t count, std::size_t radix) { return count < radix ? count : radix; }

// The tree's depth below the launcher: 1 when every host is direct.
int tree_depth(std::size_t count, std::size_t radix);

}  // namespace trainrun::cli
