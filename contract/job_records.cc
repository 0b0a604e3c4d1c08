#include "contract/job_records.h"

#include <charconv>

namespace trainrun::detail {

std::string encode_rank_record(const RankRecord& record) {
  return record.host + " " + std::to_string(record.pid) + " " + record.backend;
}

std::optional<RankRecord> decode_rank_record(std::string_view text) {
  const std::size_t first = text.find(' ');
  const std::size_t second = first == std::string_view::npos ? first : text.find(' ', first + 1);
  if (second == std::string_view::npos || text.find(' ', second + 1) != std::string_view::npos) return std::nullopt;
  RankRecord record;
  const std::string_view pid = text.substr(first + 1, second - first - 1);
  const auto parsed = std::from_chars(pid.data(), pid.data() + pid.size(), record.pid);
  if (first == 0 || parsed.ec != std::errc() || parsed.ptr != pid.data() + pid.size()) return std::nullopt;
  record.host = std::string(text.substr(0, first));
  record.backend = std::string(text.substr(second + 1));
  return record;
}

std::string encode_timeline_error(const TimelineError& failure) { return failure.path + "\n" + failure.error; }

TimelineError decode_timeline_error(std::string_view text) {
  const std::size_t newline = text.find('\n');
  if (newline == std::string_view::npos) return {std::string(text), ""};
  return {std::string(text.substr(0, newline)), std::string(text.substr(newline + 1))};
}

}  // namespace trainrun::detail
