// ShmLayout: where things sit in a shared segment of `ranks` ranks.
//
//   header (cookie)          one page
//   control line per rank    128 bytes each, written by its owner only
//   data, parity 0 and 1     per parity: one slot per rank, then a result slot
//
// Rounds alternate between the two data parities, so a rank may fill the
// next round's slot while a slow peer still reads the previous round's
// (backends/shm/shm_rounds.h says why that is enough). Pure arithmetic.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace trainrun::detail {

// One rank's flags. The owner writes `round` (a futex word: the last round
// it posted), `value` and `call`; peers read them, and touch `sleepers`
// only on their slow path, so the fast path moves one cache line per peer.
struct alignas(128) ShmControlLine {
  std::atomic<std::uint32_t> round;
  std::atomic<std::uint32_t> sleepers;  // peers in futex_wait on `round`
  std::atomic<std::uint64_t> value[2];  // published with the round, by parity
  // The descriptor of the core call whose first round this is (backends/call_descriptor.h), by parity; 0 0: none.
  std::atomic<std::uint64_t> call[2][2];
};
static_assert(sizeof(std::atomic<std::uint32_t>) * 2 + sizeof(std::atomic<std::uint64_t>) * 6 <= 64,
              "the fast path's flags stay in one 64-byte cache line");
static_assert(std::atomic<std::uint32_t>::is_always_lock_free && std::atomic<std::uint64_t>::is_always_lock_free,
              "shared-memory flags must be lock-free to work across processes");

struct ShmLayout {
  static constexpr std::size_t kHeaderBytes = 4096;
  // Bytes each rank moves per round. Large enough that the per-round
  // synchronisation is noise, small enough that a round stays in cache.
  static constexpr std::size_t kSlotBytes = 512 * 1024;

  int ranks = 0;

  std::size_t control_offset() const { return kHeaderBytes; }
  std::size_t data_offset() const {
    const std::size_t end = kHeaderBytes + static_cast<std::size_t>(ranks) * sizeof(ShmControlLine);
    return (end + 4095) / 4096 * 4096;
  }
  std::size_t parity_bytes() const { return (static_cast<std::size_t>(ranks) + 1) * kSlotBytes; }
  std::size_t total_bytes() const { return data_offset() + 2 * parity_bytes(); }
  // Rank r's slot of parity p; slot `ranks` is the result slot.
  std::size_t slot_offset(int parity, int r) const {
    return data_offset() + static_cast<std::size_t>(parity) * parity_bytes() + static_cast<std::size_t>(r) * kSlotBytes;
  }
};

}  // namespace trainrun::detail
