#include "integrations/torch_distributed/heap_allocator.h"

#include <c10/core/CPUAllocator.h>

#include <algorithm>
#include <mutex>
#include <utility>
#include <vector>

namespace trainrun::c10d {
namespace {

thread_local std::shared_ptr<detail::HostMemory> scope_heap;

// Torch's CPU allocator with the scope's heap in front of it. The blocks'
// deleter is the raw deleter too (a block's context is its address, as
// torch's raw_allocate requires), so it tells the heaps' blocks from
// torch's by asking each heap that has live blocks.
class HeapAllocator final : public c10::Allocator {
 public:
  explicit HeapAllocator(c10::Allocator* behind) : behind_(behind) {}

  c10::DataPtr allocate(std::size_t bytes) const override {
    if (scope_heap && bytes >= HeapScope::kMinBytes) {
      if (void* p = scope_heap->allocate(bytes)) {
        std::lock_guard lock(mutex_);
        // Heaps whose groups are gone and whose blocks are all freed.
        heaps_.erase(std::remove_if(heaps_.begin(), heaps_.end(),
                                    [](const Heap& h) { return h.live == 0 && h.memory.use_count() == 1; }),
                     heaps_.end());
        auto it = std::find_if(heaps_.begin(), heaps_.end(), [](const Heap& h) { return h.memory == scope_heap; });
        if (it == heaps_.end()) it = heaps_.insert(heaps_.end(), Heap{scope_heap, 0});
        ++it->live;
        return {p, p, &release, c10::Device(c10::DeviceType::CPU)};
      }
    }
    return behind_->allocate(bytes);
  }

  c10::DeleterFnPtr raw_deleter() const override { return behind_->raw_deleter() ? &release : nullptr; }

  static HeapAllocator* instance;

 private:
  struct Heap {
    std::shared_ptr<detail::HostMemory> memory;
    std::size_t live;  // blocks not yet freed
  };

  static void release(void* p) {
    {
      std::lock_guard lock(instance->mutex_);
      auto& heaps = instance->heaps_;
      for (auto it = heaps.begin(); it != heaps.end(); ++it) {
        if (!it->memory->free(p)) continue;
        // The last block of a heap whose group is gone: it is unmapped now.
        if (--it->live == 0 && it->memory.use_count() == 1) heaps.erase(it);
        return;
      }
    }
    instance->behind_->raw_deleter()(p);
  }

  c10::Allocator* behind_;
  mutable std::mutex mutex_;
  mutable std::vector<Heap> heaps_;
};

HeapAllocator* HeapAllocator::instance = nullptr;

void install() {
  static std::once_flag once;
  std::call_once(once, [] {
    HeapAllocator::instance = new HeapAllocator(c10::GetCPUAllocator());  // for the process's life
    c10::SetCPUAllocator(HeapAllocator::instance, /*priority=*/UINT8_MAX);
  });
}

}  // namespace

HeapScope::HeapScope(std::shared_ptr<detail::HostMemory> heap) : previous_(std::move(scope_heap)) {
  if (heap) install();
  scope_heap = std::move(heap);
}

HeapScope::~HeapScope() { scope_heap = std::move(previous_); }

}  // namespace trainrun::c10d
