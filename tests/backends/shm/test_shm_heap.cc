// The shared-memory heap (backends/shm/shm_heap.h) of a one-rank host: blocks
// come from the memfd, and a fork()ed child (a DataLoader's worker) neither
// hands out the parent's memory nor gives its pages back.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>

#include "backends/shm/shm_heap.h"
#include "tests/lib/elastic/memory_store.h"

using trainrun::detail::ShmHeaps;

namespace {

std::unique_ptr<ShmHeaps> one_rank_heap() {
  trainrun::testing::MemoryStore store;
  std::string why;
  auto heaps = ShmHeaps::share(store, "test", 0, 1, std::chrono::seconds(5), why);
  REQUIRE_MESSAGE(heaps, why);
  return heaps;
}

}  // namespace

TEST_CASE("a child forked from the heap's owner leaves the owner's blocks and pages alone") {
  const std::unique_ptr<ShmHeaps> heap = one_rank_heap();
  constexpr std::size_t kBytes = std::size_t{8} << 20;  // past the size whose pages a free gives back
  auto* block = static_cast<unsigned char*>(heap->allocate(kBytes));
  REQUIRE(block);
  CHECK(heap->offset_of(block, kBytes));
  std::memset(block, 0xab, kBytes);

  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    const bool freed = heap->free(block);            // the block is the heap's...
    const bool handed_out = heap->allocate(kBytes);  // ...but the child neither frees nor takes
    ::_exit(freed && !handed_out ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(std::all_of(block, block + kBytes, [](unsigned char b) { return b == 0xab; }));
  CHECK(heap->free(block));
  CHECK_FALSE(heap->free(&status));  // not the heap's
}
