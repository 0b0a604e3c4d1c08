// User text echoed in a message (a host token, a hostfile line, an option
// value) made safe for one terminal line: bytes outside printable ASCII and
// the backslash are escaped (\n, \t, \r, \\, \xNN), so a newline or an escape
// sequence in the input can neither split nor colour the message, and text
// longer than `max_bytes` is cut, saying how long it was. Pure; header-only.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace trainrun::cli {

inline constexpr std::size_t kEchoBytes = 80;  // how much of a bad token a message shows

inline std::string printable(std::string_view text, std::size_t max_bytes = kEchoBytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < max_bytes; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    switch (c) {
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\\': out += "\\\\"; break;
      default:
        if (c >= 0x20 && c < 0x7f) {
          out.push_back(static_cast<char>(c));
        } else {
          out += "\\x";
          out.push_back(kHex[c >> 4]);
          out.push_back(kHex[c & 0xf]);
        }
    }
  }
  if (text.size() > max_bytes) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

// printable() in single quotes: how messages quote a token.
inline std::string quoted(std::string_view text, std::size_t max_bytes = kEchoBytes) {
  return "'" + printable(text, max_bytes) + "'";
}

}  // namespace trainrun::cli
