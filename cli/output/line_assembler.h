// LineAssembler: turns one rank's stream of output bytes into printable
// pieces: whole lines (ending in '\n', '\r\n' or a lone '\r', so progress
// bars pass through), and, when a line stays unfinished too long or grows
// too big, what there is of it. Pure; one per rank and stream; not
// thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace trainrun::cli {

class LineAssembler {
 public:
  using Clock = std::chrono::steady_clock;
  // piece: the bytes to print; continues: true if the piece continues a line
  // already partly printed (so it gets no new prefix).
  using Emit = std::function<void(std::string_view piece, bool continues)>;

  static constexpr std::size_t kMaxPartial = 64 * 1024;

  void feed(std::string_view bytes, Clock::time_point now, const Emit& emit);
  // Emits an unfinished line older than `hold` (or any, with hold = 0).
  void flush(Clock::time_point now, Clock::duration hold, const Emit& emit);
  bool has_partial() const { return !partial_.empty(); }

 private:
  void emit_partial(const Emit& emit);

  std::string partial_;
  Clock::time_point partial_since_{};
  bool line_open_ = false;  // part of the current line was printed already
};

}  // namespace trainrun::cli
