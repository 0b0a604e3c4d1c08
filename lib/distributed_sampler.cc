#include "trainrun/sampler.h"

#include <numeric>
#include <random>

#include "trainrun/error.h"

namespace trainrun {

DistributedSampler::DistributedSampler(std::size_t dataset_size, int rank, int size, bool shuffle, std::uint64_t seed)
    : dataset_size_(dataset_size), rank_(rank), size_(size), shuffle_(shuffle), seed_(seed) {
  if (size < 1 || rank < 0 || rank >= size) {
    throw Error(Error::Code::InvalidArgument, "DistributedSampler: rank " + std::to_string(rank) +
                                                  " is not a rank of a " + std::to_string(size) + "-rank world");
  }
}

std::size_t DistributedSampler::size() const {
  return (dataset_size_ + static_cast<std::size_t>(size_) - 1) / static_cast<std::size_t>(size_);
}

std::vector<std::size_t> DistributedSampler::indices() const {
  std::vector<std::size_t> order(dataset_size_);
  std::iota(order.begin(), order.end(), std::size_t{0});
  if (shuffle_) {
    // Our own Fisher-Yates over a fixed engine: the same permutation on every
    // rank and every platform (std::shuffle's algorithm is unspecified).
    std::mt19937_64 engine(seed_ + epoch_);
    for (std::size_t i = order.size(); i > 1; --i) {
      const std::size_t j = static_cast<std::size_t>(engine() % i);
      std::swap(order[i - 1], order[j]);
    }
  }
  std::vector<std::size_t> mine;
  mine.reserve(size());
  if (dataset_size_ == 0) return mine;
  const std::size_t total = size() * static_cast<std::size_t>(size_);
  for (std::size_t k = static_cast<std::size_t>(rank_); k < total; k += static_cast<std::size_t>(size_)) {
    mine.push_back(order[k % dataset_size_]);
  }
  return mine;
}

}  // namespace trainrun
