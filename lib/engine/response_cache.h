// ResponseCache: the requests of recently completed ops, each in a numbered
// slot. In steady-state training every rank submits the same names with the
// same parameters each step; a rank whose request matches a slot reports
// just that slot's bit instead of the request, and a cycle in which no rank
// has anything else to report skips the coordinator. Every rank's cache
// must stay identical, so it changes only through calls every rank makes in
// the same order (put/erase/touch driven by negotiated results), and
// evictions are deterministic (least recently used, lowest slot first).
// Pure; not thread-safe (the engine thread owns it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/engine/request.h"

namespace trainrun::detail {

class ResponseCache {
 public:
  explicit ResponseCache(std::size_t capacity);

  enum class Match { Miss, Hit, Stale };  // Stale: the name is cached with other parameters
  struct Lookup {
    Match match = Match::Miss;
    std::size_t slot = 0;
  };
  Lookup lookup(const Request& request) const;

  // Only ops that repeat under the same name are worth a slot.
  static bool cacheable(const Request& request);
  // Caches a completed op's request (replacing the name's old entry),
  // evicting the least recently used entry when full.
  void put(const Request& request);
  void erase(std::size_t slot);
  void touch(std::size_t slot);

  bool holds(std::size_t slot) const { return slot < slots_.size() && slots_[slot].has_value(); }
  const Request& at(std::size_t slot) const { return *slots_[slot]; }
  // Bit positions in use: one past the highest slot ever filled.
  std::size_t slots() const { return slots_.size(); }
  std::size_t capacity() const { return capacity_; }

 private:
  const std::size_t capacity_;
  std::vector<std::optional<Request>> slots_;
  std::vector<std::uint64_t> last_used_;
  std::map<std::string, std::size_t> by_name_;
  std::uint64_t clock_ = 0;
};

}  // namespace trainrun::detail
