// How an elastic worker finds its generation (lib/elastic/generation_join.h)
// and how the watcher reacts to the next one (generation_watcher.h), over an
// in-memory store.
#include <doctest/doctest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "backends/backend.h"
#include "lib/elastic/forming_store.h"
#include "lib/elastic/generation_join.h"
#include "lib/elastic/generation_watcher.h"
#include "tests/lib/elastic/memory_store.h"

using trainrun::Error;
using trainrun::detail::World;
using trainrun::testing::MemoryStore;
namespace ep = trainrun::elastic_protocol;

namespace {

// Workers `workers` in rank order, two per host.
ep::Assignment assignment(int generation, std::vector<int> workers) {
  ep::Assignment a;
  a.generation = generation;
  for (int r = 0; r < static_cast<int>(workers.size()); ++r) {
    const int hosts = (static_cast<int>(workers.size()) + 1) / 2;
    a.slots.push_back({workers[r], r, r % 2, 2, r / 2, hosts, "h" + std::to_string(r / 2)});
  }
  return a;
}

void publish(MemoryStore& store, const ep::Assignment& a) {
  store.set(ep::kScope, ep::assignment_key(a.generation), ep::encode_assignment(a));
  store.set(ep::kScope, ep::kKeyGeneration, std::to_string(a.generation));
}

World worker(int id, std::chrono::milliseconds timeout = std::chrono::milliseconds(2000)) {
  World w;
  w.elastic = true;
  w.worker_id = id;
  w.elastic_timeout = timeout;
  return w;
}

// rank, size, local_rank, local_size, cross_rank, cross_size, generation.
std::vector<int> place(const World& w) {
  return {w.rank, w.size, w.local_rank, w.local_size, w.cross_rank, w.cross_size, w.generation};
}

struct AbortCounter final : trainrun::detail::Backend {
  std::atomic<int> aborts{0};
  std::string name() const override { return "fake"; }
  void allreduce(const void*, void*, std::size_t, trainrun::DataType, trainrun::ReduceOp) override {}
  void allgather(const void*, void*, std::size_t, trainrun::DataType) override {}
  void allgatherv(const void*, void*, const std::vector<std::size_t>&, trainrun::DataType) override {}
  void broadcast(void*, std::size_t, trainrun::DataType, int) override {}
  void alltoall(const void*, const std::vector<std::size_t>&, void*, const std::vector<std::size_t>&,
                trainrun::DataType) override {}
  void reducescatter(const void*, void*, const std::vector<std::size_t>&, trainrun::DataType,
                     trainrun::ReduceOp) override {}
  void barrier() override {}
  void synchronize() override {}
  void abort() noexcept override { ++aborts; }
  std::unique_ptr<Backend> subset(const std::vector<int>&, trainrun::detail::World*, const std::string&) override {
    return nullptr;
  }
};

}  // namespace

TEST_CASE("a worker takes its slot in the newest generation that lists it") {
  MemoryStore store;
  publish(store, assignment(0, {0, 1, 2}));
  publish(store, assignment(1, {2, 0}));
  World w = worker(2);
  const ep::Assignment a = trainrun::detail::join_generation(store, w, 0);
  CHECK(a.generation == 1);
  CHECK(place(w) == std::vector<int>{0, 2, 0, 2, 0, 1, 1});
}

TEST_CASE("a worker skips generations that leave it out and waits for the next") {
  MemoryStore store;
  publish(store, assignment(3, {0, 1}));
  World w = worker(5);
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    publish(store, assignment(4, {0, 1, 5}));
  });
  trainrun::detail::join_generation(store, w, 0);
  later.join();
  CHECK(place(w) == std::vector<int>{2, 3, 0, 2, 1, 2, 4});
}

TEST_CASE("after a re-form a worker never joins a generation it already left") {
  MemoryStore store;
  publish(store, assignment(2, {0, 1}));
  World w = worker(1, std::chrono::milliseconds(100));
  try {
    trainrun::detail::join_generation(store, w, 3);
    FAIL("joined");
  } catch (const Error& e) {
    CHECK(e.code() == Error::Code::Timeout);
    CHECK(std::string(e.what()) == "worker 1 was not invited to a generation after 2 within 0 s");
  }
}

TEST_CASE("a malformed assignment is an internal error") {
  MemoryStore store;
  store.set(ep::kScope, ep::kKeyGeneration, "0");
  store.set(ep::kScope, ep::assignment_key(0), "generation 0\nnonsense\n");
  World w = worker(0);
  CHECK_THROWS_WITH_AS(trainrun::detail::join_generation(store, w, 0),
                       "the assignment of elastic generation 0 is malformed", Error);
  store.set(ep::kScope, ep::kKeyGeneration, "x1");
  CHECK_THROWS_WITH_AS(trainrun::detail::join_generation(store, w, 0),
                       "the rendezvous names a malformed elastic generation 'x1'", Error);
}

TEST_CASE("the watcher records the next generation and aborts only when it drops a member") {
  using trainrun::detail::GenerationWatcher;
  for (const bool removes : {false, true}) {
    CAPTURE(removes);
    auto store = std::make_unique<MemoryStore>();
    MemoryStore& published = *store;
    AbortCounter backend;
    GenerationWatcher watcher(std::move(store), assignment(0, {0, 1}), backend, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    CHECK(watcher.newest_generation() == 0);
    publish(published, removes ? assignment(1, {1}) : assignment(1, {0, 1, 2}));
    for (int i = 0; i < 100 && watcher.newest_generation() == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    CHECK(watcher.newest_generation() == 1);
    CHECK(watcher.member_lost() == removes);
    CHECK(backend.aborts.load() == (removes ? 1 : 0));
  }
}

// The launcher tells a stopped process from a slow one by this heartbeat
// (cli/elastic/hang_detector.h): it must keep changing, also after the next
// generation appeared, while the worker runs on until its next commit.
TEST_CASE("the watcher rewrites the worker's heartbeat every half second, before and after the next generation") {
  auto store = std::make_unique<MemoryStore>();
  MemoryStore& table = *store;
  AbortCounter backend;
  trainrun::detail::GenerationWatcher watcher(std::move(store), assignment(0, {0, 7}), backend, 7);
  const auto beat = [&] { return table.get(ep::kScope, ep::alive_key(7), std::chrono::milliseconds(2000)); };
  const auto changed = [&](const std::string& before) {
    for (int i = 0; i < 300; ++i) {
      if (beat() != before) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  };
  const std::string first = beat();
  CHECK(changed(first));
  publish(table, assignment(1, {0, 7}));
  for (int i = 0; i < 100 && watcher.newest_generation() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(watcher.newest_generation() == 1);
  const std::string after = beat();
  CHECK(changed(after));
}

TEST_CASE("the watcher stops within one poll when nothing is published") {
  AbortCounter backend;
  const auto start = std::chrono::steady_clock::now();
  {
    trainrun::detail::GenerationWatcher watcher(std::make_unique<MemoryStore>(), assignment(0, {0}), backend, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const auto took = std::chrono::steady_clock::now() - start;
  CHECK(took < std::chrono::milliseconds(20) + 2 * trainrun::detail::GenerationWatcher::kPoll);
  CHECK(backend.aborts.load() == 0);
}

TEST_CASE("a backend's rendezvous wait ends as soon as a newer generation is published") {
  auto store = std::make_shared<MemoryStore>();
  trainrun::detail::FormingStore forming(store, 3, std::chrono::milliseconds(20));
  store->set("tcp.3", "present", "x");
  CHECK(forming.get("tcp.3", "present", std::chrono::milliseconds(100)) == "x");
  // Nothing newer: the wait runs its whole course and says so.
  try {
    forming.get("tcp.3", "absent", std::chrono::milliseconds(60));
    FAIL("got a value");
  } catch (const Error& e) {
    CHECK(e.code() == Error::Code::Timeout);
    CHECK(std::string(e.what()).find("(0.06 s in all)") != std::string::npos);
  }
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    publish(*store, assignment(4, {0}));
  });
  const auto start = std::chrono::steady_clock::now();
  try {
    forming.get("tcp.3", "absent", std::chrono::seconds(10));
    FAIL("got a value");
  } catch (const Error& e) {
    CHECK(e.code() == Error::Code::MembershipChanged);
    CHECK(std::string(e.what()) == "elastic generation 4 was published while generation 3 formed");
  }
  later.join();
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));
}
