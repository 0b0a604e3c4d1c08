#include <doctest/doctest.h>
#include <trainrun/error.h>
#include <trainrun/sampler.h>

#include <algorithm>
#include <set>

using trainrun::DistributedSampler;

TEST_CASE("ranks get equal, disjoint shards that cover the dataset, the same on every rank") {
  for (int size : {1, 2, 3, 4}) {
    std::multiset<std::size_t> all;
    for (int rank = 0; rank < size; ++rank) {
      DistributedSampler s(10, rank, size, true, 7);
      s.set_epoch(3);
      const auto mine = s.indices();
      CHECK(mine.size() == s.size());
      CHECK(mine.size() == (10 + size - 1) / size);
      all.insert(mine.begin(), mine.end());
      DistributedSampler again(10, rank, size, true, 7);
      again.set_epoch(3);
      CHECK(again.indices() == mine);  // deterministic: every process agrees
    }
    for (std::size_t i = 0; i < 10; ++i) CHECK(all.count(i) >= 1);  // padding repeats, never drops
    CHECK(all.size() == ((10 + size - 1) / size) * size);
  }
}

TEST_CASE("epochs reshuffle; without shuffling the order is the dataset's") {
  DistributedSampler s(100, 0, 1, true, 1);
  const auto first = s.indices();
  s.set_epoch(1);
  CHECK(s.indices() != first);
  DistributedSampler plain(6, 1, 2, false);
  CHECK(plain.indices() == std::vector<std::size_t>{1, 3, 5});
  CHECK(DistributedSampler(0, 0, 2).indices().empty());
  CHECK_THROWS_AS(DistributedSampler(5, 2, 2), trainrun::Error);
}
