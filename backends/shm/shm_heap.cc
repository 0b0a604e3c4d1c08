#include "backends/shm/shm_heap.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>

#include "trainrun/error.h"

namespace trainrun::detail {
namespace {

constexpr std::size_t kMaxReserve = std::size_t{64} << 30;
constexpr std::size_t kReturnPagesFrom = std::size_t{2} << 20;  // a freed range this large gives its pages back
constexpr const char* kHeapPrefix = "heap.";

// The machine's memory, at most kMaxReserve: no heap can need more, and a
// reserve costs address space only.
std::size_t reserve_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  const std::size_t memory =
      pages > 0 && page > 0 ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(page) : kMaxReserve;
  return std::min(memory, kMaxReserve);
}

}  // namespace

ShmHeaps::ShmHeaps(std::vector<ShmSegment> heaps, int index)
    : heaps_(std::move(heaps)), index_(index), owner_(::getpid()),
      fit_(ShmSegment::kCookieBytes, heaps_[index].size()) {}

std::unique_ptr<ShmHeaps> ShmHeaps::share(rendezvous::Store& store, const std::string& scope, int index, int ranks,
                                          std::chrono::milliseconds timeout, std::string& why) {
  std::vector<ShmSegment> heaps(static_cast<std::size_t>(ranks));
  std::string mine = "none";
  try {
    heaps[static_cast<std::size_t>(index)] =
        ShmSegment::create(reserve_bytes(), ShmSegment::Pages::kOnTouch, "trainrun-heap");
    mine = heaps[static_cast<std::size_t>(index)].published();
  } catch (const Error& e) {
    why = e.what();
  }
  store.set(scope, kHeapPrefix + std::to_string(index), mine);  // "none" tells the peers to do without
  const auto published = store.get_range(scope, kHeapPrefix, 0, static_cast<std::uint64_t>(ranks), timeout);
  for (int r = 0; r < ranks; ++r) {
    if (published[static_cast<std::size_t>(r)] == "none") {
      if (why.empty()) why = "the heap of local rank " + std::to_string(r) + " could not be made";
      continue;
    }
    if (r == index) continue;
    try {
      heaps[static_cast<std::size_t>(r)] =
          ShmSegment::attach(published[static_cast<std::size_t>(r)], ShmSegment::Pages::kOnTouch);
    } catch (const Error& e) {
      if (why.empty()) why = e.what();
    }
  }
  if (!why.empty()) return nullptr;
  return std::unique_ptr<ShmHeaps>(new ShmHeaps(std::move(heaps), index));
}

void* ShmHeaps::allocate(std::size_t bytes) {
  if (::getpid() != owner_) return nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  const std::optional<std::size_t> offset = fit_.allocate(bytes);
  return offset ? base(index_) + *offset : nullptr;
}

bool ShmHeaps::free(void* p) {
  char* at = static_cast<char*>(p);
  char* const heap = base(index_);
  if (!p || at < heap || at >= heap + heaps_[static_cast<std::size_t>(index_)].size()) return false;
  if (::getpid() != owner_) return true;  // the parent's block: its pages stay
  std::lock_guard<std::mutex> lock(mutex_);
  const std::size_t bytes = fit_.release(static_cast<std::size_t>(at - heap));
  // The memfd keeps a page until it is removed: a large range gives its
  // pages back (whole pages only; the next allocation faults them in again).
  if (bytes >= kReturnPagesFrom) {
    const std::uintptr_t page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    const std::uintptr_t first = (reinterpret_cast<std::uintptr_t>(at) + page - 1) / page * page;
    const std::uintptr_t last = (reinterpret_cast<std::uintptr_t>(at) + bytes) / page * page;
    if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_REMOVE);
  }
  return bytes > 0;
}

std::optional<std::size_t> ShmHeaps::offset_of(const void* p, std::size_t bytes) const {
  const char* at = static_cast<const char*>(p);
  const char* const heap = base(index_);
  if (at < heap || at >= heap + heaps_[static_cast<std::size_t>(index_)].size()) return std::nullopt;
  const std::size_t offset = static_cast<std::size_t>(at - heap);
  std::lock_guard<std::mutex> lock(mutex_);
  if (!fit_.holds(offset, bytes)) return std::nullopt;
  return offset;
}

}  // namespace trainrun::detail
