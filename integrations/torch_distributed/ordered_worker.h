// OrderedWorker: the one thread per c10d process group that runs its
// collectives, in the order the caller submitted them, so that every rank
// runs the same core calls in the same order (docs/design.md §5.1) while
// torch's caller gets an asynchronous Work back at once.
// A caller that waits for a task which is next in line while nothing runs
// runs it on its own thread (run_if_next, from Work::wait()): one thread
// hop less, most of a small collective's time; a task nobody waits for
// (DDP's, whose futures carry on) runs here, so async ops stay async.
// Thread-safe: every call from any thread. The first failure breaks the
// worker: every task after it fails at once, "group unusable since an
// earlier op failed: " and that failure (a group whose peer died cannot
// run another collective), unless it was an AgreedError: every rank found
// the same fault before any byte moved, so the group is still in step.
// The destructor runs what was submitted, then joins.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

namespace trainrun::c10d {

// A task's failure that every rank of the group meets at the same op,
// before any byte of it moved (split sizes that disagree): the op fails,
// the group goes on.
class AgreedError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class OrderedWorker {
 public:
  // `run` does the work and throws on failure; `done` gets the error
  // message, empty on success. Both run on whichever thread runs the task.
  using Task = std::function<void()>;
  using Done = std::function<void(const std::string& error)>;

  OrderedWorker();
  ~OrderedWorker();
  OrderedWorker(const OrderedWorker&) = delete;
  OrderedWorker& operator=(const OrderedWorker&) = delete;

  // Queues the task; returns its ticket.
  std::uint64_t submit(Task run, Done done);
  // Runs task `ticket` on this thread when it is next and nothing runs;
  // false (nothing done) otherwise.
  bool run_if_next(std::uint64_t ticket);
  // Returns once task `ticket` ran and its task and `done` (with the
  // tensors they captured) were dropped. Work::wait() calls it, so that the
  // worker never drops the last reference to a Python-owned tensor after
  // its waiter went on: at interpreter exit that drop needs the GIL, and
  // CPython ends a thread that asks for it then (pthread_exit) inside
  // torch's noexcept destructors: std::terminate.
  void wait_settled(std::uint64_t ticket);

 private:
  struct Entry {
    std::uint64_t ticket;
    Task run;
    Done done;
  };
  void loop();
  void execute(Entry& entry);  // with running_ set: one task at a time
  void settle(Entry& entry);   // drops it; running_ off, settled_ on

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Entry> queue_;
  std::uint64_t submitted_ = 0;
  bool stopping_ = false;
  bool running_ = false;       // a task runs, on the worker or a caller's thread
  std::uint64_t settled_ = 0;  // tickets up to this one ran and were dropped (they run in order)
  std::condition_variable settled_cv_;
  std::string broken_;  // the first failure's message (whoever holds running_)
  std::thread thread_;  // last: starts once the rest exists
};

}  // namespace trainrun::c10d
