#include "lib/engine/timeline_event.h"

#include <cctype>
#include <cstdio>

namespace trainrun::detail {

std::string upper_case(std::string text) {
  for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

std::string json_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof buffer, "\\u%04x", static_cast<unsigned char>(c));
          out += buffer;
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string to_json(const TimelineEvent& event) {
  std::string out = "{\"name\":\"" + json_escape(event.name) + "\",\"ph\":\"" + static_cast<char>(event.phase) +
                    "\",\"ts\":" + std::to_string(event.ts_us) + ",\"pid\":" + std::to_string(event.pid) + ",\"tid\":0";
  // Instant marks are scoped to their row unless they mark the whole trace.
  if (event.phase == TimelineEvent::Phase::Instant) out += std::string(",\"s\":\"") + event.scope + "\"";
  if (!event.args.empty()) {
    out += ",\"args\":{";
    for (std::size_t i = 0; i < event.args.size(); ++i) {
      out += (i ? ",\"" : "\"") + json_escape(event.args[i].first) + "\":\"" + json_escape(event.args[i].second) + "\"";
    }
    out += "}";
  }
  return out + "}";
}

}  // namespace trainrun::detail
