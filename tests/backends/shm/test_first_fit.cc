// The heap's allocator (backends/shm/first_fit.h): aligned ranges, first
// fit, merged when freed, and nothing handed out twice.
#include <doctest/doctest.h>

#include <vector>

#include "backends/shm/first_fit.h"

using trainrun::detail::FirstFit;

TEST_CASE("ranges are aligned to 64 bytes, first fit, and never overlap") {
  FirstFit fit(16, 16 + 1024);  // begin rounds up to 64
  const auto a = fit.allocate(1), b = fit.allocate(100), c = fit.allocate(0);
  REQUIRE(a);
  REQUIRE(b);
  REQUIRE(c);
  CHECK(*a == 64);
  CHECK(*b == 128);  // a took 64 bytes
  CHECK(*c == 256);  // b took 128
  CHECK(fit.holds(*b, 100));
  CHECK(fit.holds(*b + 64, 64));
  CHECK_FALSE(fit.holds(*b, 129));
  CHECK_FALSE(fit.allocate(1024));  // more than is left
}

TEST_CASE("freed ranges merge with their free neighbours and are used again") {
  FirstFit fit(0, 64 * 8);
  std::vector<std::size_t> at;
  for (int i = 0; i < 8; ++i) at.push_back(*fit.allocate(64));
  CHECK_FALSE(fit.allocate(64));  // full
  CHECK(fit.release(at[2]) == 64);
  CHECK(fit.release(at[4]) == 64);
  CHECK_FALSE(fit.allocate(128));   // two holes of 64, not adjacent
  CHECK(fit.release(at[3]) == 64);  // now 2..4 are one range of 192
  const auto merged = fit.allocate(192);
  REQUIRE(merged);
  CHECK(*merged == at[2]);
  CHECK(fit.release(12345) == 0);  // never handed out
  CHECK(fit.release(at[0]) == 64);
  CHECK(fit.release(at[0]) == 0);  // not twice
}
