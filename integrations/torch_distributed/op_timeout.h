// OpTimeout: a process group's timeout (init_process_group(timeout=),
// new_group(timeout=)) for every op it runs, as torch's Gloo and NCCL bound
// theirs. The core bounds a call only by the job's TRAINRUN_COLLECTIVE_TIMEOUT
// (no progress for that long), so this layer adds the per-group bound: each
// op runs inside run(), and a watchdog thread calls `expire` (the group's
// CoreGroup::abort()) once an op has run longer than the timeout. That
// makes the blocked core call fail on this rank and closes the group's
// connections for its peers; the op then fails with one line, "Timed out
// after 5 s (the process group's timeout) waiting for rank 1 (...)", and
// every later op of the group fails at once, naming that timeout. Whether
// anyone waits for the op or not (DDP's buckets), it fails in time.
// The clock starts when the op starts to run, not while it waits in line.
// Thread-safe: run() from any thread, several at once (the collectives'
// worker and the point-to-point workers).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace trainrun::c10d {

class OpTimeout {
 public:
  // `timeout` <= 0: no bound (the core's alone). `who` ("rank R (HOST)")
  // starts the messages, as the core's do.
  OpTimeout(std::chrono::milliseconds timeout, std::string who, std::function<void()> expire);
  ~OpTimeout();
  OpTimeout(const OpTimeout&) = delete;
  OpTimeout& operator=(const OpTimeout&) = delete;

  // Runs `op` (named `name` in messages) under the timeout. Throws what
  // `op` throws, or std::runtime_error "rank R (HOST): name: timed out
  // after ..." (or that another op's timeout aborted the group).
  void run(const char* name, const std::function<void()>& op);

  // "5 s", "1500 ms": the timeout as messages give it.
  static std::string describe(std::chrono::milliseconds timeout);

 private:
  using Clock = std::chrono::steady_clock;
  struct Running {
    Clock::time_point deadline;
    const char* name;
  };
  void watch();
  std::uint64_t start(const char* name);
  // Ends op `id`; true when its own deadline had passed.
  bool finish(std::uint64_t id);

  [[noreturn]] void fail(const char* name, const std::string& why) const;

  const std::chrono::milliseconds timeout_;
  const std::string who_;
  const std::function<void()> expire_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::uint64_t, Running> running_;
  std::uint64_t started_ = 0;
  bool stopping_ = false;
  std::string expired_;  // "allreduce timed out after 5 s ...", once expire_ ran
  std::thread thread_;   // last: starts once the rest exists
};

}  // namespace trainrun::c10d
