#include "cli/mpirun/mpirun_output.h"

#include <cctype>

namespace trainrun::cli {
namespace {

enum class TagMatch { kNo, kPartial, kFull };

struct Tag {
  int rank = -1;
  int stream = 1;
  std::size_t length = 0;
};

// Whether `text` starts with mpirun's "[J,R]<stdout>:" (stderr, stddiag),
// or with the beginning of one that the next read may complete.
TagMatch match_tag(std::string_view text, Tag& tag) {
  std::size_t i = 0;
  auto digits = [&](long* value) {
    const std::size_t start = i;
    long v = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) && i - start < 9) {
      v = v * 10 + (text[i++] - '0');
    }
    if (value) *value = v;
    return i > start;
  };
  auto literal = [&](std::string_view word) {  // kFull: matched; kPartial: text ended inside it
    for (char c : word) {
      if (i == text.size()) return TagMatch::kPartial;
      if (text[i++] != c) return TagMatch::kNo;
    }
    return TagMatch::kFull;
  };
  long rank = 0;
  TagMatch m = literal("[");
  if (m != TagMatch::kFull) return m;
  if (!digits(nullptr)) return i == text.size() ? TagMatch::kPartial : TagMatch::kNo;
  if ((m = literal(",")) != TagMatch::kFull) return m;
  if (!digits(&rank)) return i == text.size() ? TagMatch::kPartial : TagMatch::kNo;
  if ((m = literal("]<std")) != TagMatch::kFull) return m;
  const std::size_t name_at = i;
  for (std::string_view name : {"out>:", "err>:", "diag>:"}) {
    i = name_at;
    m = literal(name);
    if (m == TagMatch::kFull) {
      tag = Tag{static_cast<int>(rank), name == "out>:" ? 1 : 2, i};
      return m;
    }
    if (m == TagMatch::kPartial) return m;
  }
  return TagMatch::kNo;
}

}  // namespace

void MpirunOutput::feed(int stream, std::string_view bytes, Clock::time_point now) {
  State& state = states_[stream - 1];
  state.pending.append(bytes);
  parse(state, now, false);
}

void MpirunOutput::finish(Clock::time_point now) {
  for (State& state : states_) parse(state, now, true);
}

void MpirunOutput::parse(State& state, Clock::time_point now, bool at_end) {
  while (!state.pending.empty()) {
    const bool progressed = state.rank >= 0 ? take_rank_piece(state, now, at_end) : take_line_start(state, at_end);
    if (!progressed) return;
  }
}

bool MpirunOutput::take_rank_piece(State& state, Clock::time_point now, bool at_end) {
  const std::string& text = state.pending;
  const std::size_t newline = text.find('\n');
  const std::size_t limit = newline == std::string::npos ? text.size() : newline + 1;
  std::size_t end = limit;
  bool next_tag = false;
  for (std::size_t at = text.find('['); at < limit; at = text.find('[', at + 1)) {
    Tag tag;
    const TagMatch m = match_tag(std::string_view(text).substr(at), tag);
    if (m == TagMatch::kFull || (m == TagMatch::kPartial && !at_end)) {
      end = at;
      next_tag = m == TagMatch::kFull;
      break;
    }
  }
  if (end == 0 && !next_tag) return false;  // only the start of a tag: wait for the rest
  if (end > 0) router_.add(state.rank, state.rank_stream, std::string_view(text).substr(0, end), now);
  if (next_tag || (newline != std::string::npos && end == newline + 1)) state.rank = -1;
  state.pending.erase(0, end);
  return true;
}

bool MpirunOutput::take_line_start(State& state, bool at_end) {
  Tag tag;
  const TagMatch m = match_tag(state.pending, tag);
  if (m == TagMatch::kFull) {
    state.rank = tag.rank;
    state.rank_stream = tag.stream;
    state.pending.erase(0, tag.length);
    return true;
  }
  if (m == TagMatch::kPartial && !at_end) return false;
  const std::size_t newline = state.pending.find('\n');
  if (newline == std::string::npos && !at_end) return false;
  const std::size_t end = newline == std::string::npos ? state.pending.size() : newline;
  router_.note(state.pending.substr(0, end));  // mpirun's own words
  state.pending.erase(0, newline == std::string::npos ? end : end + 1);
  return true;
}

}  // namespace trainrun::cli
