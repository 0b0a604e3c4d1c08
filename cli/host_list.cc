#include "cli/host_list.h"

#include <charconv>

namespace trainrun::cli {
namespace {

constexpr int kMaxSlots = 1 << 16;

struct Token {
  HostSlots host;
  std::string error;
};

bool valid_slots(std::string_view text, int& slots) {
  const auto r = std::from_chars(text.data(), text.data() + text.size(), slots);
  return !text.empty() && r.ec == std::errc() && r.ptr == text.data() + text.size() && slots >= 1 &&
         slots <= kMaxSlots;
}

std::string check_name(std::string_view name, std::string_view what) {
  if (name.empty()) return std::string("empty ") + std::string(what);
  if (name.front() == '-') return std::string(what) + " may not start with '-'";
  for (unsigned char c : name) {
    if (c <= ' ' || c == 0x7f) return std::string(what) + " contains whitespace or a control character";
  }
  return "";
}

// "user@host", "host:N", "[v6]:N", "v6::addr" (two or more colons, no slots).
Token parse_token(std::string_view text) {
  Token t;
  const std::size_t at = text.find('@');
  if (at != std::string_view::npos) {
    t.host.user = std::string(text.substr(0, at));
    if (auto e = check_name(t.host.user, "user name"); !e.empty()) return {t.host, e};
    text.remove_prefix(at + 1);
  }
  std::string_view name = text, slots;
  if (!text.empty() && text.front() == '[') {
    const std::size_t close = text.find(']');
    if (close == std::string_view::npos) return {t.host, "unclosed '[' in IPv6 address"};
    name = text.substr(1, close - 1);
    const std::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return {t.host, "expected ':slots' after ']'"};
      slots = rest.substr(1);
      if (slots.empty()) return {t.host, "missing slot count after ':'"};
    }
  } else if (const std::size_t colon = text.rfind(':');
             colon != std::string_view::npos && text.find(':') == colon) {
    name = text.substr(0, colon);
    slots = text.substr(colon + 1);
    if (slots.empty()) return {t.host, "missing slot count after ':'"};
  }
  if (auto e = check_name(name, "host name"); !e.empty()) return {t.host, e};
  t.host.host = std::string(name);
  t.host.slots = 1;
  if (!slots.empty() && !valid_slots(slots, t.host.slots)) {
    return {t.host, "slots must be an integer from 1 to " + std::to_string(kMaxSlots)};
  }
  return t;
}

void merge(std::vector<HostSlots>& hosts, const HostSlots& host) {
  for (HostSlots& h : hosts) {
    if (h.host == host.host && h.user == host.user) {
      h.slots += host.slots;
      return;
    }
  }
  hosts.push_back(host);
}

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

}  // namespace

std::string display_name(const HostSlots& host) {
  return host.user.empty() ? host.host : host.user + "@" + host.host;
}

HostListResult parse_host_option(std::string_view text) {
  HostListResult result;
  std::size_t start = 0, index = 1;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string_view item = text.substr(start, comma - start);
    Token t = parse_token(item);
    if (!t.error.empty()) {
      result.error = "-H: host " + std::to_string(index) + " " + quoted(item) + ": " + t.error;
      return result;
    }
    merge(result.hosts, t.host);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
    ++index;
  }
  return result;
}

HostListResult parse_hostfile(std::string_view content, std::string_view origin) {
  HostListResult result;
  std::size_t line_number = 0, start = 0;
  while (start < content.size()) {
    std::size_t end = content.find('\n', start);
    if (end == std::string_view::npos) end = content.size();
    std::string_view line = content.substr(start, end - start);
    start = end + 1;
    ++line_number;
    auto fail = [&](const std::string& why) {
      result.error = std::string(origin) + ":" + std::to_string(line_number) + ": " + why;
    };
    if (const std::size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    if (line.empty()) continue;
    const std::size_t space = line.find_first_of(" \t");
    const std::string_view host_text = line.substr(0, space);
    Token t = parse_token(host_text);
    if (!t.error.empty()) return fail(quoted(host_text) + ": " + t.error), result;
    if (space != std::string_view::npos) {
      std::string_view rest = line.substr(space);
      while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
      if (rest.substr(0, 6) != "slots=") return fail(quoted(rest) + ": expected slots=N"), result;
      if (host_text.find(':') != std::string_view::npos && host_text.front() != '[' &&
          host_text.find(':') == host_text.rfind(':')) {
        return fail(quoted(line) + ": slots given twice"), result;
      }
      if (!valid_slots(rest.substr(6), t.host.slots)) {
        return fail(quoted(rest) + ": slots must be an integer from 1 to " + std::to_string(kMaxSlots)), result;
      }
    }
    merge(result.hosts, t.host);
  }
  if (result.hosts.empty()) result.error = std::string(origin) + ": no hosts";
  return result;
}

}  // namespace trainrun::cli
