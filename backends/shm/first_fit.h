// FirstFit: hands out byte ranges of [begin, end) first-fit, each aligned
// to kAlign (a cache line: every element type's alignment, and no two
// buffers share a line that two ranks' CPUs would pass back and forth);
// a freed range merges with free neighbours. Pure; not thread-safe.
#pragma once

#include <cstddef>
#include <map>
#include <optional>

namespace trainrun::detail {

class FirstFit {
 public:
  static constexpr std::size_t kAlign = 64;

  // `begin` is rounded up to kAlign.
  FirstFit(std::size_t begin, std::size_t end);

  // The offset of `bytes` (rounded up to kAlign; 0 takes kAlign), or nullopt
  // when no free range is that large.
  std::optional<std::size_t> allocate(std::size_t bytes);
  // The size of the range allocate() gave at `offset`, now free again; 0
  // when no range was given there.
  std::size_t release(std::size_t offset);
  // The range given at `offset` holds [offset, offset + bytes).
  bool holds(std::size_t offset, std::size_t bytes) const;

 private:
  std::map<std::size_t, std::size_t> free_;  // offset -> size, no two adjacent
  std::map<std::size_t, std::size_t> used_;  // offset -> size
};

}  // namespace trainrun::detail
