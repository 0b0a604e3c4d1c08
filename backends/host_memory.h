// HostMemory: host memory that a backend's collectives read and write in
// place: the shared-memory transport's heap (backends/shm/shm_heap.h), which
// the host's other ranks map too, so an allreduce among them needs no copy
// into the transport's own segment and out of it. The engine's fusion
// buffer comes from here, and Communicator::allocate_memory hands it to
// users. Thread-safe.
#pragma once

#include <cstddef>

namespace trainrun::detail {

class HostMemory {
 public:
  virtual ~HostMemory() = default;
  // 64-byte aligned, or nullptr when none is left.
  virtual void* allocate(std::size_t bytes) = 0;
  // False when `p` did not come from allocate() (nothing is freed).
  virtual bool free(void* p) = 0;
};

}  // namespace trainrun::detail
