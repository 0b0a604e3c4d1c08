// DistributedSampler: the indices of a dataset one rank trains on, like
// torch's DistributedSampler: every epoch the same permutation on every rank
// (seeded by seed + epoch), padded by wrapping around to a multiple of the
// number of ranks, then every size-th index starting at this rank's. Every
// rank gets the same count, so collectives stay in step. Pure; no LibTorch
// needed; not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace trainrun {

class DistributedSampler {
 public:
  DistributedSampler(std::size_t dataset_size, int rank, int size, bool shuffle = true, std::uint64_t seed = 0);
  void set_epoch(std::uint64_t epoch) { epoch_ = epoch; }
  std::vector<std::size_t> indices() const;
  std::size_t size() const;  // indices per rank

 private:
  std::size_t dataset_size_;
  int rank_, size_;
  bool shuffle_;
  std::uint64_t seed_;
  std::uint64_t epoch_ = 0;
};

}  // namespace trainrun
