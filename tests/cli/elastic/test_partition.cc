#include "cli/elastic/partition.h"

#include <doctest/doctest.h>

using namespace trainrun::cli::elastic;

namespace {

std::vector<Member> job(const std::vector<std::pair<std::string, int>>& hosts) {
  std::vector<Member> members;
  int worker = 0;
  for (const auto& [host, n] : hosts) {
    for (int i = 0; i < n; ++i) members.push_back({worker++, host});
  }
  return members;
}

}  // namespace

TEST_CASE("the larger side of a partition goes on, whichever side reported it") {
  const auto decision = resolve_partition(job({{"h1", 1}, {"h2", 2}}), {{"h2", "h1"}}, 2);
  REQUIRE(decision);
  CHECK(decision->keep.hosts == std::vector<std::string>{"h2"});
  CHECK(decision->keep.workers == 2);
  REQUIRE(decision->drop.size() == 1);
  CHECK(decision->drop[0].hosts == std::vector<std::string>{"h1"});
  CHECK_FALSE(decision->tie);
}

TEST_CASE("a tie goes to the side holding rank 0; hosts still connected stay together") {
  const auto decision = resolve_partition(job({{"h1", 1}, {"h2", 1}, {"h3", 1}, {"h4", 1}}),
                                          {{"h1", "h3"}, {"h1", "h4"}, {"h2", "h3"}, {"h2", "h4"}}, 2);
  REQUIRE(decision);
  CHECK(decision->keep.hosts == std::vector<std::string>{"h1", "h2"});
  CHECK(decision->drop[0].hosts == std::vector<std::string>{"h3", "h4"});
  CHECK(decision->tie);
}

TEST_CASE("no decision when nothing splits the hosts or no side meets --min-np") {
  CHECK_FALSE(resolve_partition(job({{"h1", 2}, {"h2", 2}}), {}, 2));
  // h1-h2 cut, but h3 still joins both: one side.
  CHECK_FALSE(resolve_partition(job({{"h1", 1}, {"h2", 1}, {"h3", 1}}), {{"h1", "h2"}}, 1));
  CHECK_FALSE(resolve_partition(job({{"h1", 2}, {"h2", 2}}), {{"h1", "h2"}}, 3));
}
