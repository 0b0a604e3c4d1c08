// Torch CPU tensors in trainrun's heap (backends/host_memory.h), so that
// the shared-memory allreduce reads and writes them where they lie rather
// than copying them into its segment and out (docs/design.md §11). Only
// allocations of kMinBytes or more made inside a HeapScope on that thread
// come from the heap (DDP's gradient buckets: trainrun.torch.distributed
// opens one around the Reducer's construction and its bucket rebuild);
// every other allocation, or one the heap has no room for, is torch's own.
// A block keeps its heap mapped until it is freed, after the group too.
#pragma once

#include <cstddef>
#include <memory>

#include "backends/host_memory.h"

namespace trainrun::c10d {

class HeapScope {
 public:
  static constexpr std::size_t kMinBytes = 64 * 1024;  // ShmCollectives::kInHeapMinBytes

  // A null heap: a scope that changes nothing. Installs the allocator the
  // first time (torch's CPU allocator stays the one behind it).
  explicit HeapScope(std::shared_ptr<detail::HostMemory> heap);
  ~HeapScope();
  HeapScope(const HeapScope&) = delete;
  HeapScope& operator=(const HeapScope&) = delete;

 private:
  std::shared_ptr<detail::HostMemory> previous_;
};

}  // namespace trainrun::c10d
