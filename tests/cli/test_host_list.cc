#include <doctest/doctest.h>

#include "cli/host_list.h"

using namespace trainrun::cli;

namespace {

std::string hosts_of(const HostListResult& r) {
  std::string out;
  for (const auto& h : r.hosts) out += (out.empty() ? "" : ",") + display_name(h) + "=" + std::to_string(h.slots);
  return out;
}

}  // namespace

TEST_CASE("-H: valid host lists") {
  struct Case {
    const char* text;
    const char* hosts;
  };
  const Case cases[] = {
      {"h1", "h1=1"},
      {"h1:8,h2:8", "h1=8,h2=8"},
      {"alice@h1:2,h2", "alice@h1=2,h2=1"},
      {"[::1]:4", "::1=4"},
      {"[fe80::1%eth0]", "fe80::1%eth0=1"},
      {"fe80::1", "fe80::1=1"},
      {"10.0.0.1:3", "10.0.0.1=3"},
      {"h1:2,h1:3", "h1=5"},
      {"bob@h1,h1", "bob@h1=1,h1=1"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    const HostListResult r = parse_host_option(c.text);
    CHECK(r.error == "");
    CHECK(hosts_of(r) == c.hosts);
  }
}

TEST_CASE("-H: invalid host lists name the token and its position") {
  struct Case {
    const char* text;
    const char* error;
  };
  const Case cases[] = {
      {"", "-H: host 1 '': empty host name"},
      {"h1,,h2", "-H: host 2 '': empty host name"},
      {"h1:0", "-H: host 1 'h1:0': slots must be an integer from 1 to 65536"},
      {"h1:x", "-H: host 1 'h1:x': slots must be an integer from 1 to 65536"},
      {"h1:", "-H: host 1 'h1:': missing slot count after ':'"},
      {"h1:99999999", "-H: host 1 'h1:99999999': slots must be an integer from 1 to 65536"},
      {"h1,-h2", "-H: host 2 '-h2': host name may not start with '-'"},
      {"h1,bad host", "-H: host 2 'bad host': host name contains whitespace or a control character"},
      {"h\x01", "-H: host 1 'h\x01': host name contains whitespace or a control character"},
      {"[::1", "-H: host 1 '[::1': unclosed '[' in IPv6 address"},
      {"[::1]x", "-H: host 1 '[::1]x': expected ':slots' after ']'"},
      {"@h1", "-H: host 1 '@h1': empty user name"},
      {"-rf@h1", "-H: host 1 '-rf@h1': user name may not start with '-'"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    CHECK(parse_host_option(c.text).error == c.error);
  }
}

TEST_CASE("hostfile: one grammar with comments, blanks, CRLF and slots=N") {
  const HostListResult r = parse_hostfile(
      "# cluster\r\n\r\nh1 slots=4\r\n  h2:2   # inline comment\n[::1] slots=2\nalice@h3\n\th1 slots=1\n", "hosts");
  CHECK(r.error == "");
  CHECK(hosts_of(r) == "h1=5,h2=2,::1=2,alice@h3=1");
}

TEST_CASE("hostfile: errors name the file, line and token") {
  struct Case {
    const char* content;
    const char* error;
  };
  const Case cases[] = {
      {"h1 slots=4\nh2 slot=2\n", "f:2: 'slot=2': expected slots=N"},
      {"h1 slots=abc\n", "f:1: 'slots=abc': slots must be an integer from 1 to 65536"},
      {"h1:2 slots=3\n", "f:1: 'h1:2 slots=3': slots given twice"},
      {"\n\n-h slots=1\n", "f:3: '-h': host name may not start with '-'"},
      {"# only comments\n\n", "f: no hosts"},
      {"", "f: no hosts"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.content);
    CHECK(parse_hostfile(c.content, "f").error == c.error);
  }
}
