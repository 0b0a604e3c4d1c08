// The deterministic output `rank_program spew:MB` writes, shared with the
// test that checks it arrived whole and in order: lines "R:I:payload" of
// varying length, every 5th ending in '\r' (a progress update) and the rest
// in '\n', every 3rd written in two pieces (a partial line). Pure.
#pragma once

#include <cstddef>
#include <string>

namespace trainrun::test {

inline std::string spew_line(int rank, std::size_t index) {
  std::string line = std::to_string(rank) + ":" + std::to_string(index) + ":";
  const std::size_t length = (index * 7919 + static_cast<std::size_t>(rank) * 31) % 240;
  for (std::size_t k = 0; k < length; ++k) line.push_back(static_cast<char>('a' + (index + k) % 26));
  line.push_back(index % 5 == 4 ? '\r' : '\n');
  return line;
}

// Where spew_line(rank, index) is cut into two writes, or npos.
inline std::size_t spew_split(std::size_t index, std::size_t length) {
  return index % 3 == 1 ? length / 2 : std::string::npos;
}

}  // namespace trainrun::test
