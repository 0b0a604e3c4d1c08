#include "integrations/torch_distributed/ordered_worker.h"

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

std::uint64_t OrderedWorker::submit(Task run, Done done) {
  std::uint64_t ticket = 0;
  {
    std::lock_guard lock(mutex_);
    ticket = ++submitted_;
    queue_.push_back({ticket, std::move(run), std::move(done)});
  }
  ready_.notify_one();
  return ticket;
}

bool OrderedWorker::run_if_next(std::uint64_t ticket) {
  std::unique_lock lock(mutex_);
  if (running_ || queue_.empty() || queue_.front().ticket != ticket) return false;
  Entry entry = std::move(queue_.front());
  queue_.pop_front();
  running_ = true;
  lock.unlock();
  execute(entry);
  settle(entry);
  ready_.notify_one();
  return true;
}

void OrderedWorker::settle(Entry& entry) {
  const std::uint64_t ticket = entry.ticket;
  entry = {};  // drops the task's tensors before the next task starts
  {
    std::lock_guard lock(mutex_);
    running_ = false;
    settled_ = ticket;
  }
  settled_cv_.notify_all();
}

void OrderedWorker::wait_settled(std::uint64_t ticket) {
  std::unique_lock lock(mutex_);
  settled_cv_.wait(lock, [&] { return settled_ >= ticket; });
}

void OrderedWorker::execute(Entry& entry) {
  std::string error;
  if (!broken_.empty()) {
    error = "group unusable since an earlier op failed: " + broken_;
  } else {
    try {
      entry.run();
    } catch (const AgreedError& e) {
      error = e.what();
    } catch (const std::exception& e) {
      error = e.what();
      if (error.empty()) error = "failed";
      broken_ = error;
    } catch (...) {
      error = broken_ = "failed with an unknown exception";
    }
  }
  entry.done(error);
}

void OrderedWorker::loop() {
  for (;;) {
    Entry entry;
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [&] { return !running_ && (stopping_ || !queue_.empty()); });
      if (queue_.empty()) return;
      entry = std::move(queue_.front());
      queue_.pop_front();
      running_ = true;
    }
    execute(entry);
    settle(entry);
  }
}

}  // namespace trainrun::c10d
