// TimelineEvent: one Chrome-trace event (the JSON array format that
// chrome://tracing and Perfetto load) and its JSON text. Each tensor is a
// trace "process" (pid) named by a metadata event, so its phases line up on
// one row: B/E pairs for spans, "i" for instant marks (on the row, or across
// the trace, as CYCLE_START). Pure value type.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trainrun::detail {

struct TimelineEvent {
  enum class Phase : char { Begin = 'B', End = 'E', Instant = 'i', Metadata = 'M' };
  Phase phase = Phase::Instant;
  std::string name;
  std::int64_t ts_us = 0;
  int pid = 0;
  std::vector<std::pair<std::string, std::string>> args;  // string values
  char scope = 'p';                                       // Instant: 'p' on its row, 'g' across the whole trace
};

// Trace names are upper case: "ALLREDUCE", "TCP_ALLREDUCE".
std::string upper_case(std::string text);
// One JSON object, no trailing separator.
std::string to_json(const TimelineEvent& event);
// The contents of a JSON string literal for `text` (without the quotes).
std::string json_escape(std::string_view text);

}  // namespace trainrun::detail
