// The rendezvous key-value table: opaque byte values under "scope/key"
// names, atomic counters, and waiters that fire once every key they name
// exists. Pure logic, no sockets. Thread-safe: one mutex; callbacks run on
// the thread whose set()/add() completed them, after the lock is released.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace trainrun::rendezvous {

class KvTable {
 public:
  using Values = std::vector<std::string>;
  using Callback = std::function<void(Values values)>;
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
  std::optional<Values> get_or_wait(std::vector<std::string> keys, Callback callback, WaitId* id);
  // Removes a registration; false if it already fired or never existed.
  bool cancel(WaitId id);

  std::vector<std::string> missing(const std::vector<std::string>& keys) const;
  std::size_t size() const;
  std::size_t waiter_count() const;

 private:
  struct Waiter {
    std::vector<std::string> keys;
    std::size_t next_missing = 0;  // keys before this index are known present
    Callback callback;
  };
  using Ready = std::vector<std::pair<Callback, Values>>;

  // Advances the waiter past present keys; true when all are present.
  bool advance(Waiter& waiter) const;
  Values collect(const std::vector<std::string>& keys) const;
  void wake(const std::string& key, Ready& ready);

  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::string> values_;
  std::unordered_map<WaitId, Waiter> waiters_;
  // Each waiter is parked on exactly one key (its first missing one), so the
  // index stays O(waiters) even when thousands of ranks wait for thousands
  // of keys.
  std::unordered_map<std::string, std::vector<WaitId>> parked_;
  WaitId next_id_ = 1;
};

}  // namespace trainrun::rendezvous
