#include "cli/output/line_assembler.h"

namespace trainrun::cli {

void LineAssembler::emit_partial(const Emit& emit) {
  emit(partial_, line_open_);
  line_open_ = partial_.back() != '\n' && partial_.back() != '\r';
  partial_.clear();
}

void LineAssembler::feed(std::string_view bytes, Clock::time_point now, const Emit& emit) {
  if (bytes.empty()) return;
  // A '\r' held back at the end of the last chunk was a line end after all.
  if (!partial_.empty() && partial_.back() == '\r' && bytes.front() != '\n') emit_partial(emit);
  if (partial_.empty()) partial_since_ = now;
  std::size_t start = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const char c = bytes[i];
    if (c != '\n' && c != '\r') continue;
    if (c == '\r') {
      // "\r\n" is one line end; a '\r' at the very end waits for the next byte.
      if (i + 1 == bytes.size()) break;
      if (bytes[i + 1] == '\n') ++i;
    }
    partial_.append(bytes.substr(start, i + 1 - start));
    start = i + 1;
    emit_partial(emit);
    partial_since_ = now;
  }
  partial_.append(bytes.substr(start));
  if (partial_.size() >= kMaxPartial) emit_partial(emit);
}

void LineAssembler::flush(Clock::time_point now, Clock::duration hold, const Emit& emit) {
  if (!partial_.empty() && now - partial_since_ >= hold) emit_partial(emit);
}

}  // namespace trainrun::cli
