// OutputTail: the last lines a rank wrote to a stream, bounded, for the
// report's failure entry (the failing rank's stderr). It keeps at most
// ~2 * kMaxBytes whatever the rank writes. Pure: bytes in, lines out.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace trainrun::cli {

class OutputTail {
 public:
  static constexpr std::size_t kMaxLines = 20;
  static constexpr std::size_t kMaxBytes = 4096;

  void add(std::string_view bytes);
  // The last kMaxLines lines among the last kMaxBytes bytes, without their
  // "\n" (or "\r\n"); an unfinished last line counts. A first line that the
  // byte limit cuts is left out, unless it is the only one: then its end.
  std::vector<std::string> lines() const;

 private:
  std::string kept_;  // the stream's end; once trimmed, one byte more than kMaxBytes
};

}  // namespace trainrun::cli
