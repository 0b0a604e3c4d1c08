#include "cli/report/exit_record.h"

#include <charconv>

namespace trainrun::cli {
namespace {

// The next space-separated integer of `text`, advancing it.
template <typename Int>
bool next_int(std::string_view& text, Int& value) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || (end != text.data() + text.size() && *end != ' ')) return false;
  text.remove_prefix(static_cast<std::size_t>(end - text.data()));
  return true;
}

}  // namespace

std::string encode_exit(const ExitRecord& record) {
  std::string out = std::to_string(record.status);
  if (record.usage) {
    out += " " + std::to_string(record.usage->max_rss_kb) + " " + std::to_string(record.usage->user_us) + " " +
           std::to_string(record.usage->system_us);
  }
  return out;
}

std::optional<ExitRecord> decode_exit(std::string_view payload) {
  ExitRecord record;
  if (!next_int(payload, record.status)) return std::nullopt;
  ExitRecord::Usage usage;
  if (next_int(payload, usage.max_rss_kb) && next_int(payload, usage.user_us) && next_int(payload, usage.system_us) &&
      usage.max_rss_kb >= 0 && usage.user_us >= 0 && usage.system_us >= 0) {
    record.usage = usage;
  }
  return record;
}

}  // namespace trainrun::cli
