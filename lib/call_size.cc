#include "lib/call_size.h"

#include "trainrun/error.h"

namespace trainrun::detail {
namespace {

// "128 TiB a collective can address", with a hint when `count` looks like a
// negative number that became a size_t.
std::string too_big(std::uint64_t count) {
  std::string text = "more than the 128 TiB (2^47 bytes) one collective can address";
  if (count > (std::uint64_t{1} << 63)) text += " (a negative count converted to size_t?)";
  return text;
}

// a * b, or false when the product overflows or passes kMaxCallBytes.
bool fits(std::uint64_t a, std::uint64_t b, std::uint64_t& product) {
  return !__builtin_mul_overflow(a, b, &product) && product <= kMaxCallBytes;
}

}  // namespace

void fail_bytes(std::size_t count, DataType type, std::size_t blocks) {
  std::string what = "count " + std::to_string(count) + " of " + to_string(type);
  if (blocks != 1) what += ", times " + std::to_string(blocks) + " ranks,";
  throw Error(Error::Code::InvalidArgument, what + " is " + too_big(count));
}

std::size_t checked_bytes(const std::vector<std::size_t>& counts, DataType type) {
  std::uint64_t total = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    std::uint64_t bytes = 0;
    if (!fits(counts[r], size_of(type), bytes) || __builtin_add_overflow(total, bytes, &total) ||
        total > kMaxCallBytes) {
      throw Error(Error::Code::InvalidArgument, "counts[" + std::to_string(r) + "] = " + std::to_string(counts[r]) +
                                                    " of " + to_string(type) + " brings the total to " +
                                                    too_big(counts[r]));
    }
  }
  return total;
}

std::size_t checked_elements(const std::vector<std::int64_t>& shape, DataType type, const std::string& what) {
  std::uint64_t elements = 1, bytes = 0;
  bool ok = true;
  for (std::size_t i = 0; i < shape.size() && ok; ++i)
    ok = fits(elements, static_cast<std::uint64_t>(shape[i]), elements);
  if (!ok || !fits(elements, size_of(type), bytes)) {
    throw Error(Error::Code::InvalidArgument, what + " of " + to_string(type) + ": " + too_big(0));
  }
  return elements;
}

}  // namespace trainrun::detail
