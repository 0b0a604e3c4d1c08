#include "rendezvous/kv_table.h"

#include <charconv>
#include <limits>

namespace trainrun::rendezvous {
namespace {

// Drops the entries whose owner is gone, once the map has doubled since it
// last did (amortized O(1) a call).
template <typename Map, typename Gone>
void prune(Map& map, std::size_t& pruned_at, Gone gone) {
  if (map.size() <= 2 * pruned_at + 64) return;
  for (auto it = map.begin(); it != map.end();) it = gone(it->second) ? map.erase(it) : std::next(it);
  pruned_at = map.size();
}

}  // namespace

void KvTable::set(const std::string& key, std::string value) {
  Ready ready;
  {
    std::lock_guard lock(mutex_);
    values_[key] = std::move(value);
    changed(key, ready);
  }
  for (auto& [callback, values] : ready) callback(std::move(values));
}

std::optional<std::string> KvTable::get(const std::string& key) const {
  std::lock_guard lock(mutex_);
  auto it = values_.find(key);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::optional<std::int64_t> KvTable::add(const std::string& key, std::int64_t delta) {
  Ready ready;
  std::int64_t result = 0;
  {
    std::lock_guard lock(mutex_);
    std::int64_t current = 0;
    auto it = values_.find(key);
    if (it != values_.end()) {
      const std::string& text = it->second;
      const auto parsed = std::from_chars(text.data(), text.data() + text.size(), current);
      if (parsed.ec != std::errc() || parsed.ptr != text.data() + text.size()) return std::nullopt;
    }
    if (__builtin_add_overflow(current, delta, &result)) return std::nullopt;
    values_[key] = std::to_string(result);
    changed(key, ready);
  }
  for (auto& [callback, values] : ready) callback(std::move(values));
  return result;
}

KvTable::Keys KvTable::intern(std::vector<std::string> keys) {
  std::lock_guard lock(mutex_);
  prune(interned_, interned_pruned_at_, [](const auto& held) { return held.expired(); });
  std::weak_ptr<const std::vector<std::string>>& entry = interned_[keys];
  if (Keys held = entry.lock()) return held;
  auto made = std::make_shared<const std::vector<std::string>>(std::move(keys));
  entry = made;
  return made;
}

std::optional<KvTable::SharedValues> KvTable::get_or_wait(Keys keys, Callback callback, WaitId* id) {
  std::lock_guard lock(mutex_);
  Waiter waiter{std::move(keys), 0, std::move(callback)};
  if (advance(waiter)) return collect(waiter.keys);
  const WaitId wait_id = next_id_++;
  parked_[(*waiter.keys)[waiter.next_missing]].push_back(wait_id);
  waiters_.emplace(wait_id, std::move(waiter));
  if (id) *id = wait_id;
  return std::nullopt;
}

bool KvTable::cancel(WaitId id) {
  std::lock_guard lock(mutex_);
  auto it = waiters_.find(id);
  if (it == waiters_.end()) return false;
  auto parked = parked_.find((*it->second.keys)[it->second.next_missing]);
  if (parked != parked_.end()) {
    auto& ids = parked->second;
    for (auto& parked_id : ids) {
      if (parked_id == id) {
        parked_id = ids.back();
        ids.pop_back();
        break;
      }
    }
    if (ids.empty()) parked_.erase(parked);
  }
  waiters_.erase(it);
  return true;
}

std::vector<std::string> KvTable::missing(const std::vector<std::string>& keys) const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  for (const auto& key : keys) {
    if (!values_.count(key)) out.push_back(key);
  }
  return out;
}

std::size_t KvTable::size() const {
  std::lock_guard lock(mutex_);
  return values_.size();
}

std::size_t KvTable::waiter_count() const {
  std::lock_guard lock(mutex_);
  return waiters_.size();
}

bool KvTable::advance(Waiter& waiter) const {
  const std::vector<std::string>& keys = *waiter.keys;
  while (waiter.next_missing < keys.size() && values_.count(keys[waiter.next_missing])) ++waiter.next_missing;
  return waiter.next_missing == keys.size();
}

KvTable::SharedValues KvTable::collect(const Keys& keys) {
  prune(shared_, shared_pruned_at_, [](const Shared& shared) { return shared.keys.expired(); });
  Shared& slot = shared_[keys.get()];
  if (slot.keys.lock() == keys) {
    if (SharedValues values = slot.values.lock()) return values;
  }
  auto values = std::make_shared<Values>();
  values->reserve(keys->size());
  for (const auto& key : *keys) values->push_back(values_.at(key));
  slot = {keys, values};
  return values;
}

void KvTable::changed(const std::string& key, Ready& ready) {
  shared_.clear();  // values shared before may hold the old value
  shared_pruned_at_ = 0;
  wake(key, ready);
}

void KvTable::wake(const std::string& key, Ready& ready) {
  auto parked = parked_.find(key);
  if (parked == parked_.end()) return;
  std::vector<WaitId> ids = std::move(parked->second);
  parked_.erase(parked);
  for (WaitId id : ids) {
    Waiter& waiter = waiters_.at(id);
    if (advance(waiter)) {
      ready.emplace_back(std::move(waiter.callback), collect(waiter.keys));
      waiters_.erase(id);
    } else {
      parked_[(*waiter.keys)[waiter.next_missing]].push_back(id);
    }
  }
}

}  // namespace trainrun::rendezvous
