#include "cli/plan/host_list.h"

#include <arpa/inet.h>
#include <net/if.h>

#include <charconv>

#include "cli/plan/printable.h"

namespace trainrun::cli {
namespace {

constexpr int kMaxSlots = 1 << 16;
constexpr std::size_t kMaxHostName = 253;  // DNS
constexpr std::size_t kMaxLabel = 63;      // DNS
constexpr std::size_t kMaxUserName = 64;
constexpr std::string_view kBom = "\xEF\xBB\xBF";
constexpr const char* kKeysExpected = "expected slots=N or max_slots=N";

struct Token {
  HostSlots host;
  bool slots_given = false;  // "host:N" or "[v6]:N"
  std::string error;
};

bool valid_slots(std::string_view text, int& slots) {
  const auto r = std::from_chars(text.data(), text.data() + text.size(), slots);
  return !text.empty() && r.ec == std::errc() && r.ptr == text.data() + text.size() && slots >= 1 && slots <= kMaxSlots;
}

std::string slots_range() { return "must be an integer from 1 to " + std::to_string(kMaxSlots); }

bool name_char(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
}

// "" when every character of `name` may appear in a host or user name.
std::string check_characters(std::string_view name, std::string_view what) {
  if (name.empty()) return "empty " + std::string(what);
  if (name.front() == '-') return std::string(what) + " may not start with '-'";
  for (unsigned char c : name) {
    if (c <= ' ' || c == 0x7f) return std::string(what) + " contains whitespace or a control character";
    if (!name_char(c)) {
      return std::string(what) + " may contain only letters, digits, '-', '.' and '_', not " +
             quoted(std::string_view(reinterpret_cast<const char*>(&c), 1));
    }
  }
  return "";
}

std::string check_user(std::string_view user) {
  if (auto e = check_characters(user, "user name"); !e.empty()) return e;
  if (user.size() > kMaxUserName) return "user name longer than " + std::to_string(kMaxUserName) + " characters";
  return "";
}

// A DNS name or an IPv4 address; one trailing dot (a rooted name) is fine.
std::string check_host_name(std::string_view name) {
  if (auto e = check_characters(name, "host name"); !e.empty()) return e;
  if (name.size() > kMaxHostName) return "host name longer than " + std::to_string(kMaxHostName) + " characters";
  if (name.back() == '.') name.remove_suffix(1);
  for (std::size_t start = 0; start <= name.size();) {
    std::size_t dot = name.find('.', start);
    if (dot == std::string_view::npos) dot = name.size();
    if (dot == start) return "host name has an empty label (a leading dot or two dots in a row)";
    if (dot - start > kMaxLabel)
      return "host name has a label longer than " + std::to_string(kMaxLabel) + " characters";
    start = dot + 1;
  }
  return "";
}

// An IPv6 address as inet_pton reads it, with an optional %zone (interface).
bool is_ipv6(std::string_view text) {
  const std::size_t percent = text.find('%');
  const std::string_view address = text.substr(0, percent);
  // inet_pton reads a C string: an embedded NUL would hide what follows it.
  if (address.size() >= INET6_ADDRSTRLEN || address.find('\0') != std::string_view::npos) return false;
  if (percent != std::string_view::npos) {
    const std::string_view zone = text.substr(percent + 1);
    if (zone.empty() || zone.size() >= IF_NAMESIZE) return false;
    for (unsigned char c : zone) {
      if (!name_char(c)) return false;
    }
  }
  in6_addr parsed{};
  return ::inet_pton(AF_INET6, std::string(address).c_str(), &parsed) == 1;
}

// An unbracketed token with two or more colons that is no IPv6 address.
std::string several_colons(std::string_view text) {
  const std::size_t colon = text.rfind(':');
  const std::string_view before = text.substr(0, colon);
  if (is_ipv6(before)) {
    return "not an IPv6 address; did you mean " +
           quoted("[" + std::string(before) + "]" + std::string(text.substr(colon))) + "?";
  }
  return "not a host name or an IPv6 address (one ':' comes before the slots; an IPv6 address with slots is "
         "written [addr]:slots)";
}

// "user@host", "host:N", "[v6]:N", "v6::addr" (two or more colons, no slots).
Token parse_token(std::string_view text, int default_slots) {
  Token t;
  const std::size_t at = text.find('@');
  if (at != std::string_view::npos) {
    const std::string_view user = text.substr(0, at);
    if (auto e = check_user(user); !e.empty()) return {t.host, false, e};
    t.host.user = std::string(user);
    text.remove_prefix(at + 1);
  }
  std::string_view name = text, slots;
  bool ipv6 = false;
  if (!text.empty() && text.front() == '[') {
    const std::size_t close = text.find(']');
    if (close == std::string_view::npos) return {t.host, false, "unclosed '[' in IPv6 address"};
    name = text.substr(1, close - 1);
    if (!is_ipv6(name)) return {t.host, false, quoted(name) + " in [ ] is not an IPv6 address"};
    ipv6 = true;
    const std::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return {t.host, false, "expected ':slots' after ']'"};
      slots = rest.substr(1);
      if (slots.empty()) return {t.host, false, "missing slot count after ':'"};
    }
  } else if (const std::size_t colon = text.find(':'); colon != std::string_view::npos) {
    if (text.find(':', colon + 1) != std::string_view::npos) {
      if (!is_ipv6(text)) return {t.host, false, several_colons(text)};
      ipv6 = true;
    } else {
      name = text.substr(0, colon);
      slots = text.substr(colon + 1);
      if (slots.empty()) return {t.host, false, "missing slot count after ':'"};
    }
  }
  if (!ipv6) {
    if (auto e = check_host_name(name); !e.empty()) return {t.host, false, e};
  }
  t.host.host = std::string(name);
  t.host.slots = default_slots;
  t.slots_given = !slots.empty();
  if (t.slots_given && !valid_slots(slots, t.host.slots)) return {t.host, false, "slots " + slots_range()};
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

bool blank(char c) { return c == ' ' || c == '\t'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && (blank(s.back()) || s.back() == '\r')) s.remove_suffix(1);
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  return s;
}

// "slots=4 max_slots = 8" -> {"slots=4", "max_slots=8"}: Open MPI allows
// blanks around '='.
std::vector<std::string> key_values(std::string_view rest) {
  std::vector<std::string> items;
  std::string item;
  for (std::size_t i = 0; i < rest.size(); ++i) {
    if (!blank(rest[i])) {
      item.push_back(rest[i]);
      continue;
    }
    std::size_t next = i;
    while (next < rest.size() && blank(rest[next])) ++next;
    const bool joins = (!item.empty() && item.back() == '=') || (next < rest.size() && rest[next] == '=');
    if (!joins && !item.empty()) items.push_back(std::move(item)), item.clear();
    i = next - 1;
  }
  if (!item.empty()) items.push_back(std::move(item));
  return items;
}

// The "key=N" items after a hostfile host: slots (or count) and max_slots.
// "" or why the line is refused.
std::string apply_keys(std::string_view line, std::string_view rest, Token& t) {
  int slots = 0, max_slots = 0;
  std::string slots_key, max_key;
  for (const std::string& item : key_values(rest)) {
    const std::size_t eq = item.find('=');
    const std::string key = item.substr(0, eq == std::string::npos ? item.size() : eq);
    const bool is_slots = key == "slots" || key == "count";
    const bool is_max = key == "max_slots" || key == "max-slots" || key == "slots_max" || key == "slots-max";
    if (eq == std::string::npos) return quoted(item) + ": " + kKeysExpected;
    if (!is_slots && !is_max) return "unknown key " + quoted(item) + " (" + kKeysExpected + ")";
    if ((is_slots && (t.slots_given || !slots_key.empty())) || (is_max && !max_key.empty())) {
      return quoted(line) + ": " + key + " given twice";
    }
    int& value = is_slots ? slots : max_slots;
    if (!valid_slots(std::string_view(item).substr(eq + 1), value))
      return quoted(item) + ": " + key + " " + slots_range();
    (is_slots ? slots_key : max_key) = key;
  }
  if (!slots_key.empty()) t.host.slots = slots;
  if (max_key.empty()) return "";
  if (slots_key.empty() && !t.slots_given) {
    t.host.slots = max_slots;  // as Open MPI does
  } else if (t.host.slots > max_slots) {
    return (slots_key.empty() ? "slots " : slots_key + "=") + std::to_string(t.host.slots) + " is more than " +
           max_key + "=" + std::to_string(max_slots);
  }
  return "";
}

}  // namespace

std::string display_name(const HostSlots& host) { return host.user.empty() ? host.host : host.user + "@" + host.host; }

std::string host_option_text(const std::vector<HostSlots>& hosts) {
  std::string out;
  for (const HostSlots& h : hosts) {
    const bool ipv6 = h.host.find(':') != std::string::npos;
    out += (out.empty() ? "" : ",") + (h.user.empty() ? "" : h.user + "@") + (ipv6 ? "[" + h.host + "]" : h.host) +
           ":" + std::to_string(h.slots);
  }
  return out;
}

HostListResult parse_host_option(std::string_view text, int default_slots) {
  HostListResult result;
  std::size_t start = 0, index = 1;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string_view item = text.substr(start, comma - start);
    Token t = parse_token(item, default_slots);
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

HostListResult parse_hostfile(std::string_view content, std::string_view origin, int default_slots) {
  HostListResult result;
  if (content.substr(0, kBom.size()) == kBom) content.remove_prefix(kBom.size());
  std::size_t line_number = 0, start = 0;
  while (start < content.size()) {
    std::size_t end = content.find('\n', start);
    if (end == std::string_view::npos) end = content.size();
    std::string_view line = content.substr(start, end - start);
    start = end + 1;
    ++line_number;
    auto fail = [&](const std::string& why) {
      result.error = printable(origin, std::string_view::npos) + ":" + std::to_string(line_number) + ": " + why;
      return result;
    };
    if (line.size() > kMaxHostfileLine) {
      return fail("line longer than " + std::to_string(kMaxHostfileLine) + " bytes (the limit for a hostfile)");
    }
    if (const std::size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    line = trim(line);
    if (line.empty()) continue;
    const std::size_t space = line.find_first_of(" \t");
    const std::string_view host_text = line.substr(0, space);
    Token t = parse_token(host_text, default_slots);
    if (!t.error.empty()) return fail(quoted(host_text) + ": " + t.error);
    if (space != std::string_view::npos) {
      if (auto e = apply_keys(line, line.substr(space), t); !e.empty()) return fail(e);
    }
    merge(result.hosts, t.host);
  }
  if (result.hosts.empty()) result.error = printable(origin, std::string_view::npos) + ": no hosts";
  return result;
}

}  // namespace trainrun::cli
