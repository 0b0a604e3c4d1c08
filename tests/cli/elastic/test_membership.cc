#include <doctest/doctest.h>

#include "cli/elastic/membership.h"
#include "contract/elastic_protocol.h"

using namespace trainrun::cli::elastic;
namespace ep = trainrun::elastic_protocol;

TEST_CASE("ranks are dense, by host order then worker id; survivors keep their relative order") {
  // Workers 0,1 on h1 and 2,3 on h2; worker 1 died; 5 is new on h1, 6 on h3.
  const ep::Assignment a = assign(3, {"h1", "h2", "h3"}, {{6, "h3"}, {3, "h2"}, {0, "h1"}, {5, "h1"}, {2, "h2"}});
  CHECK(a.generation == 3);
  REQUIRE(a.size() == 5);
  const int workers[] = {0, 5, 2, 3, 6};
  for (int r = 0; r < 5; ++r) {
    CHECK(a.slots[r].rank == r);
    CHECK(a.slots[r].worker == workers[r]);
  }
  CHECK(a.slots[1].local_rank == 1);
  CHECK(a.slots[1].local_size == 2);
  CHECK(a.slots[4].host == "h3");
  CHECK(a.slots[4].local_size == 1);
  // Horovod's cross ranks: local rank 0 on three hosts, local rank 1 on two.
  CHECK(a.slots[4].cross_rank == 2);
  CHECK(a.slots[4].cross_size == 3);
  CHECK(a.slots[3].cross_size == 2);
  CHECK(a.find(6)->rank == 4);
  CHECK(a.find(1) == nullptr);
}

TEST_CASE("an assignment survives encoding; malformed text is refused") {
  const ep::Assignment a = assign(7, {"h1", "h2"}, {{0, "h1"}, {4, "h2"}});
  const std::string text = ep::encode_assignment(a);
  CHECK(text == "generation 7\n0 0 0 1 0 2 h1\n4 1 0 1 1 2 h2\n");
  const auto back = ep::decode_assignment(text);
  REQUIRE(back);
  CHECK(back->generation == 7);
  CHECK(back->size() == 2);
  CHECK(back->find(4)->host == "h2");
  CHECK(back->find(4)->cross_rank == 1);
  for (const char* bad :
       {"", "generation 1\n", "generation x\n0 0 0 1 0 1 h\n", "generation 1\n0 1 0 1 0 1 h\n",
        "generation 1\n0 0 0 1 0 1 h", "generation 1\n0 0 1 1 0 1 h\n", "generation 1\n0 0 0 1 0 1 h\n0 1 0 1 0 1 h\n",
        "generation 1\n0 0 0 1 0 1 \n", "generation 1\n-1 0 0 1 0 1 h\n"}) {
    CHECK_MESSAGE(!ep::decode_assignment(bad), bad);
  }
  CHECK(ep::assignment_key(3) == "gen.3");
  CHECK(ep::ready_key(12) == "ready.12");
}
