// What the fuzz targets share: the chunk split a network would make, drawn
// from the first bytes of the input so that libFuzzer mutates it along with
// the bytes themselves, '\n'-separated fields, and a check that aborts with
// a message (libFuzzer records the input as a crash). Header only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

namespace trainrun::fuzz {

[[noreturn]] inline void check_failed(const char* what, const char* file, int line) {
  std::fprintf(stderr, "%s:%d: FUZZ_CHECK failed: %s\n", file, line, what);
  std::abort();
}

#define FUZZ_CHECK(cond) ((cond) ? (void)0 : ::trainrun::fuzz::check_failed(#cond, __FILE__, __LINE__))

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Input layout: byte 0 = n (taken mod 8), then n chunk sizes (1..256 each,
// used in turn), then the payload. n = 0: the payload arrives in one piece.
// Corpus files therefore start with "\0" followed by the real bytes.
struct ChunkedInput {
  std::vector<std::size_t> sizes;
  std::string_view payload;

  // Calls feed(chunk) for each chunk in order until it returns false.
  template <typename Feed>
  void for_each_chunk(Feed&& feed) const {
    std::string_view rest = payload;
    for (std::size_t i = 0; !rest.empty(); ++i) {
      const std::size_t n = sizes.empty() ? rest.size() : std::min(rest.size(), sizes[i % sizes.size()]);
      if (!feed(rest.substr(0, n))) return;
      rest.remove_prefix(n);
    }
  }
};

inline ChunkedInput chunked(const std::uint8_t* data, std::size_t size) {
  ChunkedInput input;
  if (size == 0) return input;
  const std::size_t n = std::min<std::size_t>(data[0] % 8, size - 1);
  for (std::size_t i = 0; i < n; ++i) input.sizes.push_back(std::size_t{data[1 + i]} + 1);
  input.payload = as_text(data + 1 + n, size - 1 - n);
  return input;
}

// The text up to the next '\n' (consumed with it); all of `rest` when there is none.
inline std::string_view next_field(std::string_view& rest) {
  const std::size_t end = rest.find('\n');
  const std::string_view field = rest.substr(0, end);
  rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
  return field;
}

}  // namespace trainrun::fuzz
