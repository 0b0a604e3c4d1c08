// The size check every core call (lib/communicator.cc) and every engine
// request (lib/api/engine_api.cc) goes through: a count, a sum of counts
// or a shape whose byte size overflows, or exceeds the largest buffer a
// process can address, is Error(InvalidArgument) naming the count, before
// any transport sees it (a negative int converted to size_t is the usual
// cause). Pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "trainrun/types.h"

namespace trainrun::detail {

// 2^47 bytes (128 TiB): the user address space of x86-64 and arm64 Linux,
// so no buffer can be larger; every transport below addresses that much.
inline constexpr std::uint64_t kMaxCallBytes = std::uint64_t{1} << 47;

[[noreturn]] void fail_bytes(std::size_t count, DataType type, std::size_t blocks);

// Bytes of `blocks` blocks (one per rank for allgather, alltoall,
// reducescatter) of `count` elements of `type`. Inline: every core call
// makes one.
inline std::size_t checked_bytes(std::size_t count, DataType type, std::size_t blocks = 1) {
  std::uint64_t elements = 0, bytes = 0;
  if (__builtin_mul_overflow(count, blocks, &elements) || __builtin_mul_overflow(elements, size_of(type), &bytes) ||
      bytes > kMaxCallBytes) {
    fail_bytes(count, type, blocks);
  }
  return bytes;
}
// Bytes of sum(counts) elements (allgatherv).
std::size_t checked_bytes(const std::vector<std::size_t>& counts, DataType type);
// Elements of a tensor of `shape` (dimensions >= 0) whose bytes fit;
// `what` starts the message ("'grad.w' has shape [4, 2]").
std::size_t checked_elements(const std::vector<std::int64_t>& shape, DataType type, const std::string& what);

}  // namespace trainrun::detail
