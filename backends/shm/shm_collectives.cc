#include "backends/shm/shm_collectives.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <vector>

#include "backends/blocks.h"

namespace trainrun::detail {
namespace {

// out = operands[0] (op) operands[1] (op) ... in that order, a block at a
// time so that `out` stays in cache between the passes. `out` may alias
// operands[0] only.
void reduce_in_order(char* out, const char* const* operands, int n, std::size_t bytes, std::size_t element,
                     ReduceFn reduce) {
  constexpr std::size_t kBlock = 16 * 1024;  // a multiple of every element size
  for (std::size_t done = 0; done < bytes; done += kBlock) {
    const std::size_t count = std::min(kBlock, bytes - done) / element;
    if (n == 1) {
      std::memmove(out + done, operands[0] + done, count * element);
      continue;
    }
    reduce(out + done, operands[0] + done, operands[1] + done, count);
    for (int k = 2; k < n; ++k) reduce(out + done, out + done, operands[k] + done, count);
  }
}

// The block at operands (one per rank) reduced in rank order, a 16 KiB
// piece at a time in the cache, and each piece copied into every one of
// `results` (one per rank, none aliasing another rank's operand), with
// streaming stores when `streaming`.
void reduce_into_every_recv(std::vector<const char*> operands, const std::vector<char*>& results, std::size_t bytes,
                            std::size_t element, ReduceFn reduce, bool streaming) {
  const int n = static_cast<int>(operands.size());
  constexpr std::size_t kPiece = 16 * 1024;  // a multiple of every element size
  alignas(64) char staged[kPiece];
  for (std::size_t done = 0; done < bytes; done += kPiece) {
    const std::size_t piece = std::min(kPiece, bytes - done);
    reduce_in_order(staged, operands.data(), n, piece, element, reduce);
    for (int k = 0; k < n; ++k) {
      operands[k] += piece;
      copy_bytes(results[k] + done, staged, piece, streaming);
    }
  }
}

// Two copies, for two kinds of traffic between the ranks' CPUs. Into this
// rank's slot (lines the peers read last round) glibc's memcpy serves best;
// out of a slot peers wrote, its REP MOVSB (copies of 2 KiB up to 512 KiB)
// ran 3-7x slower than vector moves on AMD EPYC (copy_bytes,
// backends/reduction.h), while vector moves into lines peers had read ran up
// to 3x slower than REP MOVSB when the two CPUs share no cache.
void copy(void* to, const void* from, std::size_t bytes) {
  if (bytes && to != from) std::memcpy(to, from, bytes);
}
void copy_from_peers(void* to, const void* from, std::size_t bytes, bool streaming = false) {
  if (bytes) copy_bytes(to, from, bytes, streaming);
}

std::size_t largest_block(const std::vector<std::size_t>& counts, std::size_t element) {
  std::size_t most = 0;
  for (std::size_t c : counts) most = std::max(most, c * element);
  return most;
}

// The last-level cache this CPU shares, as the kernel describes it
// (sysconf's figure may be the whole socket's: 256 MiB on a virtual machine
// whose CPUs share 32 MiB); 32 MiB when unknown.
std::size_t shared_cache_bytes() {
  std::ifstream file("/sys/devices/system/cpu/cpu0/cache/index3/size");
  std::size_t kib = 0;
  if (file >> kib && kib > 0) return kib << 10;  // "32768K"
  return std::size_t{32} << 20;
}

// Results at least this large are written past the caches (copy_bytes'
// streaming stores): the host's ranks' outputs together would not fit in
// the shared cache, so caching them only costs a read of every line first
// (64 MiB at 2 ranks: 4.1-4.3 GB/s busbw against 2.7-3.2).
std::size_t streaming_min(int ranks) {
  return std::max(shared_cache_bytes() / static_cast<std::size_t>(ranks), std::size_t{1} << 20);
}

std::size_t rounds_for(std::size_t bytes, std::size_t per_round) { return (bytes + per_round - 1) / per_round; }

// The part [round * piece, +piece) of a block of `bytes`, as {offset, length}.
std::pair<std::size_t, std::size_t> piece_of(std::size_t bytes, std::size_t round, std::size_t piece) {
  const std::size_t begin = std::min(bytes, round * piece);
  return {begin, std::min(piece, bytes - begin)};
}

}  // namespace

ShmCollectives::ShmCollectives(ShmSegment segment, int index, int ranks, ShmRounds::Options options)
    : segment_(std::move(segment)), layout_{ranks}, index_(index), ranks_(ranks),
      rounds_(reinterpret_cast<ShmControlLine*>(segment_.base() + layout_.control_offset()), index, ranks,
              std::move(options)),
      streaming_min_(streaming_min(ranks)) {}

std::size_t ShmCollectives::piece_bytes() const {
  // A multiple of 64 bytes (so of every element) that fits ranks times in a slot.
  return ShmLayout::kSlotBytes / static_cast<std::size_t>(ranks_) / 64 * 64;
}

void ShmCollectives::stage_pieces(int parity, const char* in, const std::vector<std::size_t>& offsets,
                                  const std::vector<std::size_t>& counts, std::size_t element, std::size_t round,
                                  std::size_t piece) {
  for (int b = 0; b < ranks_; ++b) {
    if (b == index_) continue;
    const auto [begin, length] = piece_of(counts[b] * element, round, piece);
    copy(slot(parity, index_) + b * piece, in + offsets[b] + begin, length);
  }
}

void ShmCollectives::allreduce_small(const void* send, void* recv, std::size_t bytes, std::size_t element,
                                     ReduceFn reduce) {
  const int p = rounds_.parity();
  std::memcpy(slot(p, index_), send, bytes);
  round();
  std::vector<const char*> operands(static_cast<std::size_t>(ranks_));
  for (int k = 0; k < ranks_; ++k) operands[k] = slot(p, k);
  reduce_in_order(static_cast<char*>(recv), operands.data(), ranks_, bytes, element, reduce);
}

namespace {

// What a rank posts in the first round of an allreduce it could run in
// place: where its send and recv lie in its heap (64-byte units, 31 bits
// each: 128 GiB), or 0.
constexpr std::uint64_t kInHeap = std::uint64_t{1} << 63;
constexpr unsigned kOffsetBits = 31;

std::uint64_t in_heap_value(const ShmHeaps& heaps, const void* send, const void* recv, std::size_t bytes) {
  const auto s = heaps.offset_of(send, bytes), r = heaps.offset_of(recv, bytes);
  const std::size_t limit = (std::size_t{1} << kOffsetBits) * FirstFit::kAlign;
  if (!s || !r || *s >= limit || *r >= limit) return 0;
  return kInHeap | (std::uint64_t{*s / FirstFit::kAlign} << kOffsetBits) | (*r / FirstFit::kAlign);
}

std::size_t send_offset(std::uint64_t value) {
  return static_cast<std::size_t>((value & ~kInHeap) >> kOffsetBits) * FirstFit::kAlign;
}
std::size_t recv_offset(std::uint64_t value) {
  return static_cast<std::size_t>(value & ((std::uint64_t{1} << kOffsetBits) - 1)) * FirstFit::kAlign;
}

}  // namespace

bool ShmCollectives::allreduce_in_heaps(std::uint64_t mine, void* recv, std::size_t bytes, std::size_t element,
                                        ReduceFn reduce) {
  round(mine);
  std::vector<std::uint64_t> where(static_cast<std::size_t>(ranks_));
  for (int k = 0; k < ranks_; ++k) {
    where[k] = rounds_.value(k);
    if (!(where[k] & kInHeap)) return false;  // some rank's buffers are its own: the copy path
  }
  // Rank k's block of the message: [begin(k), begin(k + 1)), whole elements.
  const std::size_t elements = bytes / element;
  const auto begin = [&](int k) { return elements * static_cast<std::size_t>(k) / ranks_ * element; };
  // This rank's block from every rank's send buffer, in rank order (each
  // element computed once, alike everywhere), a piece at a time in the
  // cache and from there into every rank's recv; only this rank touches
  // that block anywhere, so send may be recv. Reducing into its own recv
  // and then reading the others' blocks from theirs cost a round and a
  // read of every block where another CPU last wrote it: 2.2-2.9x slower
  // at 2 ranks from 64 KiB to 8 MiB, 1.4-2.2x at 4 (docs/benchmarks.md).
  std::vector<const char*> operands(static_cast<std::size_t>(ranks_));
  std::vector<char*> results(static_cast<std::size_t>(ranks_));
  for (int k = 0; k < ranks_; ++k) {
    operands[k] = heaps_->base(k) + send_offset(where[k]) + begin(index_);
    results[k] = (k == index_ ? static_cast<char*>(recv) : heaps_->base(k) + recv_offset(where[k])) + begin(index_);
  }
  reduce_into_every_recv(operands, results, begin(index_ + 1) - begin(index_), element, reduce,
                         bytes >= streaming_min_);
  round();  // every block is everywhere: the buffers are the callers' again
  return true;
}

void ShmCollectives::allreduce(const void* send, void* recv, std::size_t count, std::size_t element, ReduceFn reduce) {
  call_ = current_call_descriptor();
  const std::size_t bytes = count * element;
  if (bytes == 0) return;
  if (bytes <= kSmallBytes) return allreduce_small(send, recv, bytes, element, reduce);
  if (!heaps_ || bytes < kInHeapMinBytes) return void(allreduce_copied(send, recv, bytes, element, reduce, false));
  // The first round says which path runs: a rank whose buffers lie in its
  // heap posts where; one whose do not has already copied its first chunk
  // in, so where no rank's do (the usual case outside the heap) the choice
  // costs no round. Where some do and some do not, both start the copy
  // path over after that round.
  const std::uint64_t mine = in_heap_value(*heaps_, send, recv, bytes);
  if (mine ? allreduce_in_heaps(mine, recv, bytes, element, reduce)
           : allreduce_copied(send, recv, bytes, element, reduce, true)) {
    return;
  }
  allreduce_copied(send, recv, bytes, element, reduce, false);
}

bool ShmCollectives::allreduce_copied(const void* send, void* recv, std::size_t bytes, std::size_t element,
                                      ReduceFn reduce, bool heaps_may_post) {
  const char* in = static_cast<const char*>(send);
  char* out = static_cast<char*>(recv);
  const std::size_t chunk = ShmLayout::kSlotBytes / element * element;
  const std::size_t chunks = rounds_for(bytes, chunk);
  const bool streaming = bytes >= streaming_min_;
  std::vector<const char*> operands(static_cast<std::size_t>(ranks_));
  // Round j copies chunk j in and reduces this rank's slice of it into the
  // result slot, and copies chunk j-1's result (complete once every rank
  // posted round j) out.
  for (std::size_t j = 0; j <= chunks; ++j) {
    const int p = rounds_.parity();
    const std::size_t offset = j * chunk, length = j < chunks ? std::min(chunk, bytes - offset) : 0;
    const std::size_t elements = length / element;
    const std::size_t lo = elements * index_ / ranks_ * element, hi = elements * (index_ + 1) / ranks_ * element;
    // Only peers read the slot: this rank's own slice stays where it is.
    copy(slot(p, index_), in + offset, lo);
    copy(slot(p, index_) + hi, in + offset + hi, length - hi);
    round();
    if (j == 0 && heaps_may_post) {
      for (int k = 0; k < ranks_; ++k) {
        if (rounds_.value(k) & kInHeap) return false;  // that rank took no chunk in: start over together
      }
    }
    if (j > 0)
      copy_from_peers(out + offset - chunk, slot(1 - p, ranks_), std::min(chunk, bytes - (offset - chunk)), streaming);
    if (hi == lo) continue;
    for (int k = 0; k < ranks_; ++k) operands[k] = (k == index_ ? in + offset : slot(p, k)) + lo;
    reduce_in_order(slot(p, ranks_) + lo, operands.data(), ranks_, hi - lo, element, reduce);
  }
  return true;
}

void ShmCollectives::reducescatter(const void* send, const std::vector<std::size_t>& offsets, void* recv,
                                   const std::vector<std::size_t>& counts, std::size_t element, ReduceFn reduce) {
  call_ = current_call_descriptor();
  const char* in = static_cast<const char*>(send);
  const std::size_t piece = piece_bytes();
  const std::size_t rounds = rounds_for(largest_block(counts, element), piece);
  const std::size_t mine = counts[index_] * element;
  std::vector<const char*> operands(static_cast<std::size_t>(ranks_));
  for (std::size_t j = 0; j < rounds; ++j) {
    const int p = rounds_.parity();
    stage_pieces(p, in, offsets, counts, element, j, piece);
    round();
    const auto [begin, length] = piece_of(mine, j, piece);
    if (length == 0) continue;
    for (int k = 0; k < ranks_; ++k) {
      operands[k] = k == index_ ? in + offsets[index_] + begin : slot(p, k) + index_ * piece;
    }
    reduce_in_order(static_cast<char*>(recv) + begin, operands.data(), ranks_, length, element, reduce);
  }
}

void ShmCollectives::allgatherv(const void* send, void* recv, const std::vector<std::size_t>& counts,
                                std::size_t element) {
  call_ = current_call_descriptor();
  char* out = static_cast<char*>(recv);
  const auto offsets = block_offsets(counts, element);
  const std::size_t mine = counts[index_] * element;
  if (send) copy(out + offsets[index_], send, mine);
  const std::size_t piece = ShmLayout::kSlotBytes;
  const std::size_t rounds = rounds_for(largest_block(counts, element), piece);
  const bool streaming = offsets.back() >= streaming_min_;
  for (std::size_t j = 0; j < rounds; ++j) {
    const int p = rounds_.parity();
    const auto [begin, length] = piece_of(mine, j, piece);
    copy(slot(p, index_), out + offsets[index_] + begin, length);
    round();
    for (int k = 0; k < ranks_; ++k) {
      if (k == index_) continue;
      const auto [from, bytes] = piece_of(counts[k] * element, j, piece);
      copy_from_peers(out + offsets[k] + from, slot(p, k), bytes, streaming);
    }
  }
}

void ShmCollectives::broadcast(void* data, std::size_t bytes, int root) {
  call_ = current_call_descriptor();
  char* buf = static_cast<char*>(data);
  // Only the root writes: the whole parity (every slot) carries its data.
  const std::size_t piece = layout_.parity_bytes();
  const std::size_t rounds = rounds_for(bytes, piece);
  for (std::size_t j = 0; j < rounds; ++j) {
    const int p = rounds_.parity();
    const auto [begin, length] = piece_of(bytes, j, piece);
    if (index_ == root) std::memcpy(slot(p, 0), buf + begin, length);
    round();
    if (index_ != root) copy_from_peers(buf + begin, slot(p, 0), length, bytes >= streaming_min_);
  }
}

void ShmCollectives::alltoall(const void* send, const std::vector<std::size_t>& send_counts, void* recv,
                              const std::vector<std::size_t>& recv_counts, std::size_t element) {
  call_ = current_call_descriptor();
  const char* in = static_cast<const char*>(send);
  char* out = static_cast<char*>(recv);
  const auto send_offsets = block_offsets(send_counts, element);
  const auto recv_offsets = block_offsets(recv_counts, element);
  copy(out + recv_offsets[index_], in + send_offsets[index_], send_counts[index_] * element);
  const std::size_t piece = piece_bytes();
  const std::uint64_t largest = std::max(largest_block(send_counts, element), largest_block(recv_counts, element));
  // Block sizes differ between ranks: the first round also agrees on how
  // many rounds the largest block anywhere needs.
  std::size_t rounds = 1;
  for (std::size_t j = 0; j < rounds; ++j) {
    const int p = rounds_.parity();
    stage_pieces(p, in, send_offsets, send_counts, element, j, piece);
    round(largest);
    if (j == 0) {
      std::uint64_t most = 0;
      for (int k = 0; k < ranks_; ++k) most = std::max(most, rounds_.value(k));
      rounds = std::max<std::size_t>(1, rounds_for(most, piece));
    }
    for (int k = 0; k < ranks_; ++k) {
      if (k == index_) continue;
      const auto [begin, length] = piece_of(recv_counts[k] * element, j, piece);
      copy_from_peers(out + recv_offsets[k] + begin, slot(p, k) + index_ * piece, length);
    }
  }
}

}  // namespace trainrun::detail
