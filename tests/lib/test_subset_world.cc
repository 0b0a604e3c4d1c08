// Process sets' agreement check (lib/subset_world.h): when ranks disagree,
// every rank gets one text naming job ranks by what they did, none singled
// out as the wrong one (issue 37: the old text blamed a rank that had asked
// for no set at all).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "lib/subset_world.h"
#include "trainrun/error.h"

using trainrun::detail::check_subset_agrees;
using trainrun::detail::subset_record;
using trainrun::detail::SubsetRecord;
using trainrun::detail::World;

namespace {

World world_of(int size, std::vector<int> members = {}) {
  World w;
  w.size = size;
  w.members = std::move(members);
  return w;
}

std::string failure(const std::vector<SubsetRecord>& records, const World& parent) {
  try {
    check_subset_agrees(records, parent);
  } catch (const trainrun::Error& e) {
    CHECK(e.code() == trainrun::Error::Code::Mismatch);
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("process set agreement: the same set everywhere passes") {
  const SubsetRecord r = subset_record({1, 2}, "h", 0);
  CHECK(failure({r, r, r}, world_of(3)) == "no error");
}

TEST_CASE("process set agreement: a rank in another collective call is named as such") {
  SubsetRecord other = subset_record({1, 2}, "h", 0);
  other.magic = 42;  // the bytes of an allreduce that met the allgather
  const SubsetRecord r = subset_record({1, 2}, "h", 0);
  CHECK(failure({other, r, r}, world_of(3)) ==
        "rank 0 made another collective call where the others asked for a process set (every rank must make the same "
        "process sets in the same order)");
}

TEST_CASE("process set agreement: different counts of sets before, and different ranks, name each group") {
  CHECK(failure({subset_record({1, 2}, "h", 1), subset_record({1, 2}, "h", 2), subset_record({1, 2}, "h", 2)},
                world_of(3)) ==
        "process sets made before this one: rank 0 made 1, ranks 1, 2 made 2 (every rank must make the same process "
        "sets in the same order)");
  CHECK(failure({subset_record({0, 1}, "h", 0), subset_record({1, 2}, "h", 0), subset_record({0, 1}, "h", 0)},
                world_of(3)) ==
        "ranks 0, 2 asked for one set of ranks, rank 1 for another (every rank must pass the same ranks, in the same "
        "order of calls)");
}

TEST_CASE("process set agreement: within a set, ranks are named as the job knows them") {
  CHECK(failure({subset_record({0}, "h", 0), subset_record({1}, "h", 0)}, world_of(2, {3, 5})) ==
        "rank 3 asked for one set of ranks, rank 5 for another (every rank must pass the same ranks, in the same "
        "order of calls)");
}
