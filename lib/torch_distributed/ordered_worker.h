// OrderedWorker: the one thread per c10d process group that runs its
// collectives, in the order the caller submitted them, so that every rank
// runs the same core calls in the same order (docs/design.md §5.1) while
// torch's caller gets an asynchronous Work back at once.
// A small task may run on the caller's thread instead (submit(..., inline)
// when nothing is queued or running): one thread hop less per op, which is
// most of a small collective's time; later tasks still wait behind it.
// Thread-safe: submit() from any thread. The first failure breaks the
// worker: every task after it fails at once with the same message (a
// group whose peer died cannot run another collective). The destructor
// runs what was submitted, then joins.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace trainrun::c10d {

class OrderedWorker {
 public:
  // `run` does the work and throws on failure; `done` gets the error
  // message, empty on success. Both run on the worker's thread.
  using Task = std::function<void()>;
  using Done = std::function<void(const std::string& error)>;

  OrderedWorker();
  ~OrderedWorker();
  OrderedWorker(const OrderedWorker&) = delete;
  OrderedWorker& operator=(const OrderedWorker&) = delete;

  // Queues the task; with `may_run_here`, runs it on this thread instead
  // when the worker is idle with nothing queued.
  void submit(Task run, Done done, bool may_run_here = false);

 private:
  void loop();
  void execute(std::pair<Task, Done>& task);  // with running_ set: one task at a time

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::pair<Task, Done>> queue_;
  bool stopping_ = false;
  bool running_ = false;  // a task runs, on the worker or a caller's thread
  std::string broken_;    // the first failure's message (whoever holds running_)
  std::thread thread_;    // last: starts once the rest exists
};

}  // namespace trainrun::c10d
