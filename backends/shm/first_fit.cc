#include "backends/shm/first_fit.h"

#include <iterator>

namespace trainrun::detail {
namespace {

std::size_t round_up(std::size_t n) { return (n + FirstFit::kAlign - 1) / FirstFit::kAlign * FirstFit::kAlign; }

}  // namespace

FirstFit::FirstFit(std::size_t begin, std::size_t end) {
  begin = round_up(begin);
  if (begin < end) free_.emplace(begin, (end - begin) / kAlign * kAlign);
}

std::optional<std::size_t> FirstFit::allocate(std::size_t bytes) {
  bytes = bytes == 0 ? kAlign : round_up(bytes);
  if (bytes == 0) return std::nullopt;  // overflowed
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < bytes) continue;
    const std::size_t offset = it->first, left = it->second - bytes;
    free_.erase(it);
    if (left) free_.emplace(offset + bytes, left);
    used_.emplace(offset, bytes);
    return offset;
  }
  return std::nullopt;
}

std::size_t FirstFit::release(std::size_t offset) {
  const auto used = used_.find(offset);
  if (used == used_.end()) return 0;
  const std::size_t bytes = used->second;
  used_.erase(used);
  std::size_t start = offset, size = bytes;
  auto next = free_.lower_bound(offset);
  if (next != free_.begin()) {
    auto before = std::prev(next);
    if (before->first + before->second == start) {
      start = before->first;
      size += before->second;
      free_.erase(before);
    }
  }
  if (next != free_.end() && offset + bytes == next->first) {
    size += next->second;
    free_.erase(next);
  }
  free_.emplace(start, size);
  return bytes;
}

bool FirstFit::holds(std::size_t offset, std::size_t bytes) const {
  auto it = used_.upper_bound(offset);
  if (it == used_.begin()) return false;
  --it;
  return offset - it->first <= it->second && bytes <= it->second - (offset - it->first);
}

}  // namespace trainrun::detail
