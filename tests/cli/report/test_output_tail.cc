#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cli/report/output_tail.h"

using namespace trainrun::cli;
using Lines = std::vector<std::string>;

TEST_CASE("the last lines, whatever the pieces they came in; an unfinished last line counts") {
  OutputTail tail;
  CHECK(tail.lines().empty());
  tail.add("first\r\nsec");
  tail.add("ond\nthird");
  CHECK(tail.lines() == Lines{"first", "second", "third"});
}

TEST_CASE("at most 20 lines") {
  OutputTail tail;
  for (int i = 0; i < 25; ++i) tail.add("line " + std::to_string(i) + "\n");
  const Lines lines = tail.lines();
  REQUIRE(lines.size() == OutputTail::kMaxLines);
  CHECK(lines.front() == "line 5");
  CHECK(lines.back() == "line 24");
}

TEST_CASE("at most the last 4096 bytes: a line they cut is left out, unless it is the only one") {
  OutputTail tail;
  tail.add(std::string(3000, 'a') + "\n");
  for (int i = 0; i < 10; ++i) tail.add(std::string(999, 'b') + "\n");  // 10000 bytes: trimmed
  tail.add("last\n");
  const Lines lines = tail.lines();
  REQUIRE(lines.size() == 5);  // 4 whole lines of b and "last" (5 + 4000 bytes); the 5th b line is cut
  CHECK(lines[0] == std::string(999, 'b'));
  CHECK(lines.back() == "last");
  OutputTail one;
  one.add(std::string(10000, 'x') + "END");
  CHECK(one.lines() == Lines{std::string(OutputTail::kMaxBytes - 3, 'x') + "END"});
  OutputTail exact;  // the 4096 bytes start a line: nothing is cut
  exact.add("cut\n" + std::string(4095, 'y') + "\n");
  CHECK(exact.lines() == Lines{std::string(4095, 'y')});
}
