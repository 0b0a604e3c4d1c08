#include <doctest/doctest.h>

#include "lib/engine/cycle_status.h"
#include "lib/engine/response_cache.h"

using namespace trainrun;
using namespace trainrun::detail;
using Match = ResponseCache::Match;

namespace {

Request req(const std::string& name, std::vector<std::int64_t> shape = {4}, OpType op = OpType::Allreduce) {
  Request r;
  r.name = name;
  r.op = op;
  r.shape = std::move(shape);
  return r;
}

}  // namespace

TEST_CASE("hit, miss, and stale when the parameters changed") {
  ResponseCache cache(8);
  CHECK(cache.lookup(req("a")).match == Match::Miss);
  cache.put(req("a"));
  cache.put(req("b"));
  CHECK(cache.lookup(req("a")).match == Match::Hit);
  CHECK(cache.lookup(req("b")).slot == 1);
  CHECK(cache.lookup(req("a", {5})).match == Match::Stale);
  CHECK(cache.lookup(req("a", {4}, OpType::Allgather)).match == Match::Stale);
  Request older = req("a");
  older.age_ms = 999;
  CHECK(cache.lookup(older).match == Match::Hit);
}

TEST_CASE("allgather hits whatever its first dimension") {
  ResponseCache cache(8);
  cache.put(req("g", {3, 7}, OpType::Allgather));
  CHECK(cache.lookup(req("g", {9, 7}, OpType::Allgather)).match == Match::Hit);
  CHECK(cache.lookup(req("g", {3, 8}, OpType::Allgather)).match == Match::Stale);
}

TEST_CASE("only repeating ops are cached; capacity 0 caches nothing") {
  ResponseCache cache(8);
  cache.put(req("#barrier.3", {}, OpType::Barrier));
  cache.put(req("#core.3", {1}, OpType::Core));
  cache.put(req("#join", {}, OpType::Join));
  CHECK(cache.slots() == 0);
  ResponseCache none(0);
  none.put(req("a"));
  CHECK(none.lookup(req("a")).match == Match::Miss);
}

TEST_CASE("a full cache evicts the least recently used entry, the same way on every rank") {
  ResponseCache a(3), b(3);
  for (ResponseCache* c : {&a, &b}) {
    c->put(req("x"));
    c->put(req("y"));
    c->put(req("z"));
    c->touch(0);       // x used again
    c->put(req("w"));  // evicts y (slot 1)
  }
  CHECK(a.lookup(req("y")).match == Match::Miss);
  CHECK(a.lookup(req("w")).slot == 1);
  CHECK(a.slots() == 3);
  for (std::size_t s = 0; s < 3; ++s) CHECK(a.at(s).name == b.at(s).name);
}

TEST_CASE("erase frees a slot; a renegotiated name keeps its slot") {
  ResponseCache cache(4);
  cache.put(req("a"));
  cache.put(req("b"));
  cache.erase(0);
  CHECK_FALSE(cache.holds(0));
  CHECK(cache.lookup(req("a")).match == Match::Miss);
  cache.put(req("b", {9}));
  CHECK(cache.lookup(req("b", {9})).slot == 1);
  CHECK(cache.lookup(req("b", {9})).match == Match::Hit);
}

TEST_CASE("the cycle status: Min over ranks answers every question") {
  // Three ranks; rank 1 has joined. Slot 0: hit on ranks 0 and 2; slot 1:
  // hit on rank 0 only; slot 2: rank 2 found it stale.
  CycleStatus r0(3, false), r1(3, true), r2(3, false);
  r0.mark_ready(0);
  r0.mark_ready(1);
  r2.mark_ready(0);
  r2.mark_stale(2);
  r2.set_reports();
  r0.set_shutdown();
  CycleStatus min = r0;
  for (CycleStatus* other : {&r1, &r2}) {
    for (std::size_t i = 0; i < min.size(); ++i) min.data()[i] = std::min(min.data()[i], other->data()[i]);
  }
  CHECK(min.ready(0));
  CHECK_FALSE(min.ready(1));
  CHECK(min.stale(2));
  CHECK(min.any_reports());
  CHECK(min.any_shutdown());
  CHECK_FALSE(min.stall_shutdown());
  CHECK_FALSE(min.all_joined());
  CHECK(r1.all_joined());  // alone, a joined rank is "all joined"
}
