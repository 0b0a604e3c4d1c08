#include "lib/engine/response_cache.h"

namespace trainrun::detail {

ResponseCache::ResponseCache(std::size_t capacity) : capacity_(capacity) {}

bool ResponseCache::cacheable(const Request& request) {
  switch (request.op) {
    case OpType::Allreduce:
    case OpType::Allgather:
    case OpType::Broadcast:
    case OpType::Alltoall:
    case OpType::Reducescatter: return true;
    case OpType::Barrier:  // named by a counter: never repeats
    case OpType::Join:
    case OpType::Core: return false;
  }
  return false;
}

ResponseCache::Lookup ResponseCache::lookup(const Request& request) const {
  const auto it = by_name_.find(request.name);
  if (it == by_name_.end()) return {Match::Miss, 0};
  const bool same = !disagreement(*slots_[it->second], 0, request, 1);
  return {same ? Match::Hit : Match::Stale, it->second};
}

void ResponseCache::put(const Request& request) {
  if (capacity_ == 0 || !cacheable(request)) return;
  std::size_t slot;
  if (const auto it = by_name_.find(request.name); it != by_name_.end()) {
    slot = it->second;
  } else if (slots_.size() < capacity_) {
    slot = slots_.size();
    slots_.emplace_back();
    last_used_.push_back(0);
  } else {
    // A free slot if there is one, else the least recently used.
    slot = 0;
    for (std::size_t s = 0; s < slots_.size(); ++s) {
      if (!slots_[s]) {
        slot = s;
        break;
      }
      if (last_used_[s] < last_used_[slot]) slot = s;
    }
    if (slots_[slot]) by_name_.erase(slots_[slot]->name);
  }
  slots_[slot] = request;
  slots_[slot]->age_ms = 0;
  by_name_[request.name] = slot;
  last_used_[slot] = ++clock_;
}

void ResponseCache::erase(std::size_t slot) {
  if (!holds(slot)) return;
  by_name_.erase(slots_[slot]->name);
  slots_[slot].reset();
}

void ResponseCache::touch(std::size_t slot) {
  if (holds(slot)) last_used_[slot] = ++clock_;
}

}  // namespace trainrun::detail
