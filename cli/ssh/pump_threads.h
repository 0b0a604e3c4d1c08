// PumpThreads: the few threads that move every SSH host agent's bytes.
// A remote host costs the launcher a Pumped (its session and its end of a
// socketpair), not a thread: one thread serves up to kLinksPerPumpThread
// hosts, and never more than kMaxPumpThreads threads run, however many
// hosts the job has (past that the hosts are shared out evenly). Each
// thread polls its links' descriptors together and steps only the links
// whose descriptors are ready or whose deadline has come, so an idle host
// costs nothing. Thread-safe; a thread ends when the last link on it goes.
#pragma once

#include <poll.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "os/unique_fd.h"

namespace trainrun::cli {

inline constexpr std::size_t kLinksPerPumpThread = 16;
inline constexpr std::size_t kMaxPumpThreads = 4;

// One link's work, called on its pump thread only.
class Pumped {
 public:
  using Clock = std::chrono::steady_clock;
  virtual ~Pumped() = default;
  // Appends the descriptors it waits for; returns when it wants a step
  // even if none is ready.
  virtual Clock::time_point arm(std::vector<pollfd>& fds) = 0;
  // After the poll (`fds`: what arm() appended, with their revents; null
  // for the first step): moves what it can. False once the link is done:
  // the thread drops it and never calls it again.
  virtual bool step(const pollfd* fds) = 0;
};

class PumpThread {
 public:
  PumpThread();
  ~PumpThread();  // joins; every link on it is gone by then
  PumpThread(const PumpThread&) = delete;
  PumpThread& operator=(const PumpThread&) = delete;

  // Starts pumping `link`; it stays until its step() says false.
  void add(std::shared_ptr<Pumped> link);
  // Makes the thread call every link's step() soon (a stop request).
  void wake();
  std::size_t links() const { return links_; }

 private:
  void run();

  std::mutex mutex_;
  std::vector<std::shared_ptr<Pumped>> incoming_;  // under mutex_
  bool quit_ = false;                              // under mutex_
  PipeFds wake_;
  std::atomic<std::size_t> links_{0};  // added and not yet dropped
  std::thread thread_;
};

// The thread a new link should go on: the least busy one, or a new one
// while there are fewer than kMaxPumpThreads and each holds
// kLinksPerPumpThread. Throws Error(Io) when a thread cannot be made.
std::shared_ptr<PumpThread> pump_thread_for_new_link();

}  // namespace trainrun::cli
