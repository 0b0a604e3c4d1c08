#include "lib/torch_distributed/ordered_worker.h"

#include <exception>
#include <utility>

namespace trainrun::c10d {

OrderedWorker::OrderedWorker() : thread_([this] { loop(); }) {}

OrderedWorker::~OrderedWorker() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_one();
  thread_.join();
}

void OrderedWorker::submit(Task run, Done done, bool may_run_here) {
  std::unique_lock lock(mutex_);
  if (!may_run_here || running_ || !queue_.empty()) {
    queue_.emplace_back(std::move(run), std::move(done));
    lock.unlock();
    ready_.notify_one();
    return;
  }
  running_ = true;
  lock.unlock();
  std::pair<Task, Done> task(std::move(run), std::move(done));
  execute(task);
  lock.lock();
  running_ = false;
  const bool more = !queue_.empty();
  lock.unlock();
  if (more) ready_.notify_one();
}

void OrderedWorker::execute(std::pair<Task, Done>& task) {
  std::string error = broken_;
  if (error.empty()) {
    try {
      task.first();
    } catch (const std::exception& e) {
      error = e.what();
      if (error.empty()) error = "failed";
      broken_ = error;
    } catch (...) {
      error = broken_ = "failed with an unknown exception";
    }
  }
  task.second(error);
}

void OrderedWorker::loop() {
  for (;;) {
    std::pair<Task, Done> task;
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [&] { return (stopping_ && !running_) || (!queue_.empty() && !running_); });
      if (queue_.empty()) return;
      task = std::move(queue_.front());
      queue_.pop_front();
      running_ = true;
    }
    execute(task);
    task = {};  // drops the task's tensors before the next one starts
    std::lock_guard lock(mutex_);
    running_ = false;
  }
}

}  // namespace trainrun::c10d
