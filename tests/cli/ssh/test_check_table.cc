#include <doctest/doctest.h>

#include "cli/ssh/check_table.h"

using namespace trainrun::cli;

TEST_CASE("the check table aligns its columns") {
  const std::string table = format_check_table({{"h1", "connect", "ok: root@10.0.0.1:22", true},
                                                {"nobody@h2", "login", "authentication failed (publickey)", false}});
  CHECK(table ==
        "  host       check    result\n"
        "  h1         connect  ok: root@10.0.0.1:22\n"
        "  nobody@h2  login    authentication failed (publickey)\n");
}

TEST_CASE("the pre-flight report counts failed hosts and lists only failed checks") {
  const std::string report = preflight_failure_report({{"h1", "connect", "ok", true},
                                                       {"h2", "program", "no such file: /x", false},
                                                       {"h2", "directory", "no such directory: /d", false},
                                                       {"h3", "connect", "timed out", false}},
                                                      4);
  CHECK(report ==
        "trainrun: pre-flight checks failed on 2 of 4 host(s) (h2, h3); nothing was started\n"
        "  host  check      result\n"
        "  h2    program    no such file: /x\n"
        "  h2    directory  no such directory: /d\n"
        "  h3    connect    timed out\n");
}

TEST_CASE("the reachability matrix: ok, FAIL and not tried, then each failure's error") {
  const std::string matrix =
      format_reach_matrix({"h1", "h2"}, {"rendezvous", "h1", "h2"},
                          {{"", "-", ""}, {"timed out", "Connection refused (ECONNREFUSED)", "-"}});
  CHECK(matrix ==
        "  from  rendezvous  h1    h2\n"
        "  h1    ok          -     ok\n"
        "  h2    FAIL        FAIL  -\n"
        "  h2 -> rendezvous: timed out\n"
        "  h2 -> h1: Connection refused (ECONNREFUSED)\n");
}
