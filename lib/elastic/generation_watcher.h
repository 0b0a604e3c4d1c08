// GenerationWatcher: one per elastic communicator. A thread of its own,
// with its own rendezvous connection (HttpStore is not thread-safe), waits
// for the launcher to publish the generation after the one this process
// joined. When it appears the watcher records it (State::commit reads it and
// all ranks agree to re-form), and when that generation drops a member of
// ours (a rank died, a host was lost) it aborts the backend so that ranks
// blocked in a collective with the missing member fail at once instead of
// waiting out the collective timeout. Its thread also rewrites the worker's
// heartbeat (alive.{w}, every elastic_protocol::kHeartbeat) for as long as
// it lives, so that the launcher can tell a stopped or frozen process
// (SIGSTOP, a frozen cgroup, a machine swapping to death) from a slow one.
// Thread-safe: newest_generation() from any thread. Owned next to the
// communicator and destroyed (joined) before it, or told to leave() it: the
// backend must outlive it while it is attached. A worker that leaves its
// generation on its own (a collective failed: timeout, lost connection) keeps
// its watcher until it joins the next: the launcher still sees it beat, and
// its probe still reports it stuck, so that a partition is resolved as it
// would be had the collective waited (cli/elastic/partition.h).
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "backends/backend.h"
#include "lib/elastic/peer_probe.h"
#include "contract/world.h"
#include "contract/elastic_protocol.h"
#include "rendezvous/store.h"

namespace trainrun::detail {

class GenerationWatcher {
 public:
  // `joined` is the assignment of world.generation; `backend` is aborted
  // (Backend::abort is noexcept and callable from any thread) when the next
  // generation removes one of its members.
  // `probe`, when given, runs on the watcher's thread (network partitions).
  GenerationWatcher(std::unique_ptr<rendezvous::Store> store, elastic_protocol::Assignment joined, Backend& backend,
                    int worker, std::unique_ptr<PeerProbe> probe = nullptr);
  ~GenerationWatcher();  // stops and joins within one poll (<= kPoll)
  GenerationWatcher(const GenerationWatcher&) = delete;
  GenerationWatcher& operator=(const GenerationWatcher&) = delete;

  // The newest generation seen: the joined one until the next appears.
  int newest_generation() const { return newest_.load(); }
  // Whether the next generation removed a member of the joined one.
  bool member_lost() const { return member_lost_.load(); }
  // The backend is about to be destroyed: never abort it again; the probe
  // counts this worker stuck until the watcher is destroyed, and left.{w}
  // tells the launcher this worker waits for the next generation, and why.
  void leave(const std::string& cause);

  // The longest a single store wait lasts: bounds how long destruction (a
  // re-form's shutdown) takes, at the price of 20 requests/s per worker on
  // the launcher's server (measured: a re-form's shutdown took <= 38 ms with
  // 50 ms polls, up to 100.5 ms with 100 ms ones).
  static constexpr std::chrono::milliseconds kPoll{50};
  // The pause after a store error (launcher restarting, connection lost).
  static constexpr std::chrono::milliseconds kRetry{200};

 private:
  void watch() noexcept;
  bool wait_for_next();
  void beat();
  void tell_left();
  void on_next(const std::string& text);
  bool sleep_unless_stopped(std::chrono::milliseconds pause);

  std::unique_ptr<rendezvous::Store> store_;  // the thread's alone
  const elastic_protocol::Assignment joined_;
  Backend* backend_;  // under mutex_; null once left
  const std::string alive_key_;
  const std::string left_key_;
  const std::unique_ptr<PeerProbe> probe_;
  std::chrono::steady_clock::time_point next_beat_{};
  std::atomic<int> newest_;
  std::atomic<bool> member_lost_{false};
  std::optional<std::string> left_;  // under mutex_: left.{w}'s value, until written
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable wake_;
  std::thread thread_;  // last: starts once the members above exist
};

// Whether some worker of `joined` has no slot in `next`.
bool removes_member(const elastic_protocol::Assignment& joined, const elastic_protocol::Assignment& next);

}  // namespace trainrun::detail
