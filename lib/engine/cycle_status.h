// CycleStatus: the bytes each rank contributes to a cycle's status
// allreduce, and what their element-wise Min says. One allreduce (UInt8,
// Min) answers every question a cycle needs, because Min over bytes is an
// AND over "yes = 1" and an OR over "yes = 0":
//   flags  reports?  shutdown?  stall shutdown?   (0 = some rank says yes)
//          out of step? (rank 0's decision)
//          joined?  a caller waiting?             (1 = every rank says yes)
//   slots  one byte per response-cache slot: 2 = this rank has a request
//          that hits the slot (or has joined), 1 = not yet, 0 = stale (a
//          request under the slot's name disagrees with it). After the Min:
//          2 = ready on every rank, 0 = stale somewhere, drop the slot.
// Pure value type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace trainrun::detail {

class CycleStatus {
 public:
  CycleStatus(std::size_t slots, bool joined) : bytes_(kFlags + slots, joined ? kReady : kWaiting) {
    bytes_[kReports] = bytes_[kShutdown] = bytes_[kStallShutdown] = bytes_[kOutOfStep] = 1;
    bytes_[kJoined] = joined ? 1 : 0;
    bytes_[kWaiter] = 0;
  }

  void set_reports() { bytes_[kReports] = 0; }
  void set_shutdown() { bytes_[kShutdown] = 0; }
  void set_stall_shutdown() { bytes_[kStallShutdown] = 0; }
  void set_out_of_step() { bytes_[kOutOfStep] = 0; }
  void set_waiter() { bytes_[kWaiter] = 1; }
  void mark_ready(std::size_t slot) { bytes_[kFlags + slot] = kReady; }
  void mark_stale(std::size_t slot) { bytes_[kFlags + slot] = kStale; }

  std::uint8_t* data() { return bytes_.data(); }
  std::size_t size() const { return bytes_.size(); }

  // Valid after the Min over every rank.
  bool any_reports() const { return bytes_[kReports] == 0; }
  bool any_shutdown() const { return bytes_[kShutdown] == 0; }
  bool stall_shutdown() const { return bytes_[kStallShutdown] == 0; }
  bool out_of_step() const { return bytes_[kOutOfStep] == 0; }
  bool all_joined() const { return bytes_[kJoined] == 1; }
  bool all_waiting() const { return bytes_[kWaiter] == 1; }
  std::size_t slots() const { return bytes_.size() - kFlags; }
  bool ready(std::size_t slot) const { return bytes_[kFlags + slot] == kReady; }
  bool stale(std::size_t slot) const { return bytes_[kFlags + slot] == kStale; }

 private:
  enum : std::size_t { kReports, kShutdown, kStallShutdown, kOutOfStep, kJoined, kWaiter, kFlags };
  static constexpr std::uint8_t kStale = 0, kWaiting = 1, kReady = 2;
  std::vector<std::uint8_t> bytes_;
};

}  // namespace trainrun::detail
