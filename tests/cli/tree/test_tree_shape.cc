#include <doctest/doctest.h>

#include <algorithm>

#include "cli/tree/tree_shape.h"

using namespace trainrun::cli;

TEST_CASE("a tree no wider than its radix is every host direct") {
  const std::vector<TreePlace> shape = tree_shape(4, 8);
  REQUIRE(shape.size() == 4);
  for (std::uint32_t i = 0; i < 4; ++i) {
    CHECK(shape[i].parent == -1);
    CHECK(shape[i].child == i);
    CHECK(shape[i].block_begin == shape[i].block_end);
  }
  CHECK(tree_depth(4, 8) == 1);
  CHECK(tree_direct_count(4, 8) == 4);
}

TEST_CASE("radix 2 over 7 hosts: two direct, the rest in even contiguous blocks below them") {
  const std::vector<TreePlace> shape = tree_shape(7, 2);
  // 0 and 1 direct; 0 starts [2, 5): 2, 3 direct and 4 below 2; 1 starts [5, 7).
  CHECK(shape[0].parent == -1);
  CHECK(shape[1].parent == -1);
  CHECK(shape[1].child == 1);
  CHECK(shape[0].block_begin == 2);
  CHECK(shape[0].block_end == 5);
  CHECK(shape[1].block_begin == 5);
  CHECK(shape[1].block_end == 7);
  CHECK(shape[2].parent == 0);
  CHECK(shape[2].child == 0);
  CHECK(shape[3].parent == 0);
  CHECK(shape[3].child == 1);
  CHECK(shape[4].parent == 2);
  CHECK(shape[4].child == 0);
  CHECK(shape[5].parent == 1);
  CHECK(shape[6].parent == 1);
  CHECK(shape[6].child == 1);
  CHECK(tree_depth(7, 2) == 3);
}

TEST_CASE("radix 1 is a chain") {
  const std::vector<TreePlace> shape = tree_shape(4, 1);
  for (int i = 1; i < 4; ++i) {
    CHECK(shape[static_cast<std::size_t>(i)].parent == i - 1);
    CHECK(shape[static_cast<std::size_t>(i)].child == 0);
  }
  CHECK(tree_depth(4, 1) == 4);
}

TEST_CASE("a relay given its block computes the launcher's shape of it") {
  // 1,000 hosts at radix 32: the launcher holds 32 links, every host has one
  // parent before it, no host has more than 32 children, and a direct host's
  // block, shaped alone, matches the launcher's view of it.
  const std::size_t n = 1000, radix = 32;
  const std::vector<TreePlace> shape = tree_shape(n, radix);
  std::vector<std::size_t> children(n, 0);
  std::size_t direct = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (shape[i].parent < 0) {
      ++direct;
      continue;
    }
    const auto parent = static_cast<std::size_t>(shape[i].parent);
    CHECK(parent < i);
    ++children[parent];
  }
  CHECK(direct == radix);
  CHECK(*std::max_element(children.begin(), children.end()) <= radix);
  CHECK(tree_depth(n, radix) == 2);  // 32 + 32 x 32 >= 1,000
  CHECK(tree_depth(2000, radix) == 3);
  const TreePlace& first = shape[0];
  const std::vector<TreePlace> block = tree_shape(first.block_end - first.block_begin, radix);
  for (std::size_t j = 0; j < block.size(); ++j) {
    const TreePlace& seen = shape[first.block_begin + j];
    CHECK(seen.child == block[j].child);
    if (block[j].parent < 0) CHECK(seen.parent == 0);
    else CHECK(static_cast<std::size_t>(seen.parent) == first.block_begin + static_cast<std::size_t>(block[j].parent));
  }
}
