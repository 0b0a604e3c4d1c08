#include <doctest/doctest.h>

#include "cli/plan/host_list.h"

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
      {"h\x01", "-H: host 1 'h\\x01': host name contains whitespace or a control character"},
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
      {"h1 slots=4\nh2 slot=2\n", "f:2: unknown key 'slot=2' (expected slots=N or max_slots=N)"},
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

TEST_CASE("fuzz regressions: an embedded NUL never hides the rest of an IPv6 address") {
  // tests/fuzz/fuzz_host_list found "[fe79::1\0\0\0\x0e" "0]" accepted as host
  // "fe79::1\0\0\0\x0e" "0": inet_pton stopped reading at the NUL.
  for (const std::string& text : {std::string("[fe79::1\0\0\0\x0e"
                                              "0]",
                                              14),
                                  std::string("fe79::1\0x", 9), std::string("[::1\0]:2", 8)}) {
    CAPTURE(text);
    CHECK_FALSE(parse_host_option(text).ok());
    CHECK_FALSE(parse_hostfile(text, "f").ok());
  }
}

TEST_CASE("-H: every token is checked before SSH code sees it") {
  struct Case {
    std::string text;
    std::string error;
  };
  const std::string long_name(1 << 20, 'a');
  const std::string label64(64, 'b');
  const Case cases[] = {
      {"h:2:3",
       "-H: host 1 'h:2:3': not a host name or an IPv6 address (one ':' comes before the slots; an IPv6 "
       "address with slots is written [addr]:slots)"},
      {"a:b:c:1",
       "-H: host 1 'a:b:c:1': not a host name or an IPv6 address (one ':' comes before the slots; an "
       "IPv6 address with slots is written [addr]:slots)"},
      {"fe80::1%eth0:4", "-H: host 1 'fe80::1%eth0:4': not an IPv6 address; did you mean '[fe80::1%eth0]:4'?"},
      {"=x", "-H: host 1 '=x': host name may contain only letters, digits, '-', '.' and '_', not '='"},
      {"x]:2", "-H: host 1 'x]:2': host name may contain only letters, digits, '-', '.' and '_', not ']'"},
      {"h\xc3\xa9",
       "-H: host 1 'h\\xc3\\xa9': host name may contain only letters, digits, '-', '.' and '_', not "
       "'\\xc3'"},
      {"h1,a\nb", "-H: host 2 'a\\nb': host name contains whitespace or a control character"},
      {long_name, "-H: host 1 '" + std::string(80, 'a') + "... (1048576 bytes)': host name longer than 253 characters"},
      {label64 + ".example", "-H: host 1 '" + label64 + ".example': host name has a label longer than 63 characters"},
      {"a..b", "-H: host 1 'a..b': host name has an empty label (a leading dot or two dots in a row)"},
      {".a", "-H: host 1 '.a': host name has an empty label (a leading dot or two dots in a row)"},
      {"[h1]:2", "-H: host 1 '[h1]:2': 'h1' in [ ] is not an IPv6 address"},
      {"[]", "-H: host 1 '[]': '' in [ ] is not an IPv6 address"},
      {"[::1%]:2", "-H: host 1 '[::1%]:2': '::1%' in [ ] is not an IPv6 address"},
      {"a b@h", "-H: host 1 'a b@h': user name contains whitespace or a control character"},
      {"a=b@h", "-H: host 1 'a=b@h': user name may contain only letters, digits, '-', '.' and '_', not '='"},
      {std::string(65, 'u') + "@h", "-H: host 1 '" + std::string(65, 'u') + "@h': user name longer than 64 characters"},
      {"u@h@g", "-H: host 1 'u@h@g': host name may contain only letters, digits, '-', '.' and '_', not '@'"},
      {"h1,,h2", "-H: host 2 '': empty host name"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text.substr(0, 100));
    CHECK(parse_host_option(c.text).error == c.error);
  }
}

TEST_CASE("-H: names and addresses that are fine") {
  const std::string label63(63, 'x');
  for (const std::string& text :
       {std::string("node-01.cluster_a.example.org"), std::string("host."), label63 + "." + label63,
        std::string("192.168.0.1:2"), std::string("::1"), std::string("2001:db8::1"), std::string("[2001:db8::1]:4"),
        std::string("fe80::1%eth0"), std::string("first.last@h"), std::string("_svc@h")}) {
    CAPTURE(text);
    CHECK(parse_host_option(text).error == "");
  }
  CHECK(hosts_of(parse_host_option("[2001:db8::1]:4,u.v@n_1:2")) == "2001:db8::1=4,u.v@n_1=2");
}

TEST_CASE("hostfile: Open MPI's keys, a BOM, and limits") {
  CHECK(hosts_of(parse_hostfile("\xEF\xBB\xBFh1 slots=2\n", "f")) == "h1=2");
  CHECK(hosts_of(parse_hostfile("localhost slots=2 max_slots=4\n", "f")) == "localhost=2");
  CHECK(hosts_of(parse_hostfile("a max-slots=3\nb count=2 slots-max=2\nc:2 slots_max=2\nd slots = 5\n", "f")) ==
        "a=3,b=2,c=2,d=5");
  struct Case {
    std::string content;
    std::string error;
  };
  const Case cases[] = {
      {"h1\nh2\nh3 foo=1\n", "f:3: unknown key 'foo=1' (expected slots=N or max_slots=N)"},
      {"h1 slots=8 max_slots=4\n", "f:1: slots=8 is more than max_slots=4"},
      {"h1:8 max-slots=4\n", "f:1: slots 8 is more than max-slots=4"},
      {"h1 max_slots=0\n", "f:1: 'max_slots=0': max_slots must be an integer from 1 to 65536"},
      {"h1 slots=2 count=3\n", "f:1: 'h1 slots=2 count=3': count given twice"},
      {"h1 max_slots=2 max-slots=3\n", "f:1: 'h1 max_slots=2 max-slots=3': max-slots given twice"},
      {"h1 slots\n", "f:1: 'slots': expected slots=N or max_slots=N"},
      {"\xEF\xBB\xBF\xEF\xBB\xBFh1\n",
       "f:1: '\\xef\\xbb\\xbfh1': host name may contain only letters, digits, "
       "'-', '.' and '_', not '\\xef'"},
      {"h1\n" + std::string(4097, '#') + "\n", "f:2: line longer than 4096 bytes (the limit for a hostfile)"},
      {"h\x01x slots=1\n", "f:1: 'h\\x01x': host name contains whitespace or a control character"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.content.substr(0, 100));
    CHECK(parse_hostfile(c.content, "f").error == c.error);
  }
  CHECK(parse_hostfile(std::string(4096, '#') + "\nh1\n", "f").error == "");
  CHECK(parse_hostfile("# none", "a\nb").error == "a\\nb: no hosts");
}

TEST_CASE("host_option_text writes hosts that parse_host_option reads back") {
  const HostListResult r = parse_host_option("h1:2,root@h2,[fe80::1]:3,10.0.0.5:4");
  REQUIRE(r.ok());
  const std::string text = host_option_text(r.hosts);
  CHECK(text == "h1:2,root@h2:1,[fe80::1]:3,10.0.0.5:4");
  const HostListResult back = parse_host_option(text);
  REQUIRE(back.ok());
  REQUIRE(back.hosts.size() == 4);
  CHECK(back.hosts[1].user == "root");
  CHECK(back.hosts[2].host == "fe80::1");
  CHECK(back.hosts[2].slots == 3);
}

TEST_CASE("horovodrun's --slots-per-host: the slots of a host given without any") {
  CHECK(hosts_of(parse_host_option("h1,h2:3,[::1],alice@h3", 4)) == "h1=4,h2=3,::1=4,alice@h3=4");
  CHECK(hosts_of(parse_hostfile("h1\nh2 slots=2\nh3:5\nh4 max_slots=6\n", "hosts", 4)) == "h1=4,h2=2,h3=5,h4=6");
  CHECK(hosts_of(parse_host_option("h1,h1", 2)) == "h1=4");
}
