// ShmCollectives: the CPU collectives among the ranks of one host, through
// a shared segment (backends/shm/shm_segment.h) in rounds
// (backends/shm/shm_rounds.h). Each round moves at most one slot
// (ShmLayout::kSlotBytes) per rank; long messages take many rounds, and
// since round i+1's copy-in overlaps nobody's reads of round i (the two
// parities), reading, reducing and writing of successive chunks overlap
// across ranks.
//
// Reductions happen in the shared slots: every rank copies its input in,
// then reduces its own slice of the chunk from every rank's slot, in rank
// order (rank 0's value first), so each element is computed once, by one
// rank, identically on every rank. Messages up to kSmallBytes take one
// round: every rank reduces the whole vector itself, in the same order.
// An allreduce of at least kInHeapMinBytes whose buffers every rank took
// from its heap (backends/shm/shm_heap.h: the peers map each other's) runs
// in place instead: each rank reduces its block straight out of every
// rank's send buffer and writes it into every rank's recv, past the caches
// when the results would not fit in the shared one (docs/design.md §5.3).
// No byte passes through the segment. The ranks agree in that call's first
// round, which costs ranks whose buffers are their own no extra round.
// Ranks here are indices in the group (0..ranks-1). The first round of
// each collective carries the calling core call's descriptor: a rank in
// another call, or with another dtype, count, reduce op or root, makes it
// Error(Mismatch) on every rank (backends/shm/shm_rounds.h).
// Not thread-safe; abort() may come from any thread.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "backends/blocks.h"
#include "backends/reduction.h"
#include "backends/shm/shm_heap.h"
#include "backends/shm/shm_layout.h"
#include "backends/shm/shm_rounds.h"
#include "backends/shm/shm_segment.h"
#include "backends/core_call.h"

namespace trainrun::detail {

class ShmCollectives {
 public:
  static constexpr std::size_t kSmallBytes = 32 * 1024;
  static constexpr std::size_t kInHeapMinBytes = 64 * 1024;

  ShmCollectives(ShmSegment segment, int index, int ranks, ShmRounds::Options options);

  int index() const { return index_; }
  int ranks() const { return ranks_; }
  // The host's heaps (share()d by every rank alike); none: every collective copies.
  void set_heaps(std::shared_ptr<ShmHeaps> heaps) { heaps_ = std::move(heaps); }
  const std::shared_ptr<ShmHeaps>& heaps() const { return heaps_; }

  // send may equal recv (in place).
  void allreduce(const void* send, void* recv, std::size_t count, std::size_t element, ReduceFn reduce);
  // send holds every rank's block (counts[r] elements, rank by rank); recv
  // gets this rank's reduced block. send and recv do not alias.
  void reducescatter(const void* send, void* recv, const std::vector<std::size_t>& counts, std::size_t element,
                     ReduceFn reduce) {
    reducescatter(send, block_offsets(counts, element), recv, counts, element, reduce);
  }
  // As above, but rank r's block starts at byte offsets[r] of send (blocks
  // may lie anywhere: a slice of each of several longer blocks).
  void reducescatter(const void* send, const std::vector<std::size_t>& offsets, void* recv,
                     const std::vector<std::size_t>& counts, std::size_t element, ReduceFn reduce);
  // send == nullptr: in place, this rank's block already sits in recv.
  void allgatherv(const void* send, void* recv, const std::vector<std::size_t>& counts, std::size_t element);
  void broadcast(void* data, std::size_t bytes, int root);
  // Block r of send goes to rank r; block r of recv comes from rank r.
  void alltoall(const void* send, const std::vector<std::size_t>& send_counts, void* recv,
                const std::vector<std::size_t>& recv_counts, std::size_t element);
  void barrier() {
    call_ = current_call_descriptor();
    round();
  }
  void abort() noexcept { rounds_.abort(); }
  void set_spin(std::chrono::nanoseconds spin) { rounds_.set_spin(spin); }  // ShmRounds::set_spin

 private:
  // Completes a round; the first of each collective carries the core
  // call's descriptor (backends/core_call.h), which every rank checks.
  void round(std::uint64_t value = 0) { rounds_.sync(value, std::exchange(call_, CallDescriptor{})); }
  char* slot(int parity, int r) const { return segment_.base() + layout_.slot_offset(parity, r); }
  void allreduce_small(const void* send, void* recv, std::size_t bytes, std::size_t element, ReduceFn reduce);
  // The in-place allreduce when every rank's buffers lie in its heap (the
  // round that posts `mine`, where this rank's lie, is the call's first);
  // false: some rank's do not, and the copy path runs after that round.
  bool allreduce_in_heaps(std::uint64_t mine, void* recv, std::size_t bytes, std::size_t element, ReduceFn reduce);
  // The allreduce through the segment. With `heaps_may_post` (its first
  // round is the call's first, and peers may post their heaps in it) it
  // returns false after that round if one did: every rank then runs it
  // again from the start (without).
  bool allreduce_copied(const void* send, void* recv, std::size_t bytes, std::size_t element, ReduceFn reduce,
                        bool heaps_may_post);
  // Bytes of one peer's sub-slot when a slot is split among the ranks.
  std::size_t piece_bytes() const;
  // Copies piece `round` of the block for every peer b (blocks at
  // `offsets` in `in`) into sub-slot b of this rank's slot.
  void stage_pieces(int parity, const char* in, const std::vector<std::size_t>& offsets,
                    const std::vector<std::size_t>& counts, std::size_t element, std::size_t round, std::size_t piece);

  ShmSegment segment_;
  const ShmLayout layout_;
  const int index_;
  const int ranks_;
  ShmRounds rounds_;
  CallDescriptor call_;              // set as a collective starts, sent with its first round
  const std::size_t streaming_min_;  // outputs from this size bypass the caches
  std::shared_ptr<ShmHeaps> heaps_;
};

}  // namespace trainrun::detail
