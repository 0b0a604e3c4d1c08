// ShmHeaps: the heaps of one host's ranks. This rank's own heap is memory
// it hands out (HostMemory: the engine's fusion buffer,
// Communicator::allocate_memory); every peer's is mapped here too, so the
// shared-memory collectives can read a peer's buffer where it lies and
// write this rank's result where the peer reads it (ShmCollectives'
// in-place allreduce: no copy into the segment's slots and out). Each heap
// is a memfd segment (backends/shm/shm_segment.h: opened only by the same
// user, checked by a cookie the authenticated rendezvous carries) reserved
// at the machine's memory (at most 64 GiB) whose pages come on first touch
// and go back (MADV_REMOVE) when a range of 2 MiB or more is freed.
// allocate() and free() are thread-safe; the rest belongs to the
// collectives' thread. In a child fork()ed from the owner (a DataLoader's
// worker) the heap is the parent's: allocate() gives nothing and free()
// leaves the block and its pages to the parent.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "backends/host_memory.h"
#include "backends/shm/first_fit.h"
#include "backends/shm/shm_segment.h"
#include "rendezvous/store.h"

namespace trainrun::detail {

class ShmHeaps final : public HostMemory {
 public:
  // Collective over the host's `ranks` ranks (`index`: this one's),
  // exchanging the heaps through `store` under `scope` (keys heap.INDEX).
  // Null with `why` when this rank's heap cannot be made or a peer's mapped
  // (the collectives then copy, as without heaps).
  static std::unique_ptr<ShmHeaps> share(rendezvous::Store& store, const std::string& scope, int index, int ranks,
                                         std::chrono::milliseconds timeout, std::string& why);

  void* allocate(std::size_t bytes) override;
  bool free(void* p) override;

  // Where [p, p + bytes) lies in this rank's heap, when one allocation holds it.
  std::optional<std::size_t> offset_of(const void* p, std::size_t bytes) const;
  // Heap `index` (0..ranks-1) as mapped here.
  char* base(int index) const { return heaps_[static_cast<std::size_t>(index)].base(); }
  // Once every peer has mapped this rank's heap: its descriptor is closed.
  void close_descriptor() { heaps_[static_cast<std::size_t>(index_)].close_descriptor(); }

 private:
  ShmHeaps(std::vector<ShmSegment> heaps, int index);

  std::vector<ShmSegment> heaps_;  // by index; [index_] is this rank's
  const int index_;
  const pid_t owner_;  // the process that made it
  mutable std::mutex mutex_;
  FirstFit fit_;  // offsets in heaps_[index_], under mutex_
};

}  // namespace trainrun::detail
