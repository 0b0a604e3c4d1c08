// The rendezvous key-value table: opaque byte values under "scope/key"
// names, atomic counters, and waiters that fire once every key they name
// exists. Pure logic, no sockets. Thread-safe: one mutex; callbacks run on
// the thread whose set()/add() completed them, after the lock is released.
// Waiters on the same keys share one copy of the key list (intern) and of
// the values until a key changes: N ranks that each read all N addresses
// cost O(N) bytes, not O(N²).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace trainrun::rendezvous {

class KvTable {
 public:
  using Values = std::vector<std::string>;
  using SharedValues = std::shared_ptr<const Values>;
  using Keys = std::shared_ptr<const std::vector<std::string>>;
  using Callback = std::function<void(SharedValues values)>;
  using WaitId = std::uint64_t;

  void set(const std::string& key, std::string value);
  std::optional<std::string> get(const std::string& key) const;
  // Adds delta to the decimal integer stored at key (absent = 0) and returns
  // the new value; nullopt when the stored value is not an int64 or the sum
  // overflows (the value is then left unchanged).
  std::optional<std::int64_t> add(const std::string& key, std::int64_t delta);

  // When every key exists, returns their values (in order) and registers
  // nothing. Otherwise registers `callback` to be called with the values once
  // they all exist and returns nullopt; `*id` identifies the registration.
  std::optional<SharedValues> get_or_wait(Keys keys, Callback callback, WaitId* id);
  std::optional<SharedValues> get_or_wait(std::vector<std::string> keys, Callback callback, WaitId* id) {
    return get_or_wait(intern(std::move(keys)), std::move(callback), id);
  }
  // The one list of these keys everyone holds while anyone does.
  Keys intern(std::vector<std::string> keys);
  // Removes a registration; false if it already fired or never existed.
  bool cancel(WaitId id);

  std::vector<std::string> missing(const std::vector<std::string>& keys) const;
  std::size_t size() const;
  std::size_t waiter_count() const;

 private:
  struct Waiter {
    Keys keys;
    std::size_t next_missing = 0;  // keys before this index are known present
    Callback callback;
  };
  using Ready = std::vector<std::pair<Callback, SharedValues>>;

  // Advances the waiter past present keys; true when all are present.
  bool advance(Waiter& waiter) const;
  // The values of `keys` (all present), shared with earlier callers of the
  // same keys since the last change.
  SharedValues collect(const Keys& keys);
  // Called with the lock held by every change of a value.
  void changed(const std::string& key, Ready& ready);
  void wake(const std::string& key, Ready& ready);

  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::string> values_;
  std::unordered_map<WaitId, Waiter> waiters_;
  // Each waiter is parked on exactly one key (its first missing one), so the
  // index stays O(waiters) even when thousands of ranks wait for thousands
  // of keys.
  std::unordered_map<std::string, std::vector<WaitId>> parked_;
  WaitId next_id_ = 1;
  std::map<std::vector<std::string>, std::weak_ptr<const std::vector<std::string>>> interned_;
  std::size_t interned_pruned_at_ = 0;  // the size after the last prune()
  // The values shared for an interned list since the last change, by the
  // list's address (checked against its owner: an address may be reused).
  struct Shared {
    std::weak_ptr<const std::vector<std::string>> keys;
    std::weak_ptr<const Values> values;
  };
  std::unordered_map<const std::vector<std::string>*, Shared> shared_;
  std::size_t shared_pruned_at_ = 0;
};

}  // namespace trainrun::rendezvous
