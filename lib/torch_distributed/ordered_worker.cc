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

void OrderedWorker::submit(Task run, Done done) {
  {
    std::lock_guard lock(mutex_);
    queue_.emplace_back(std::move(run), std::move(done));
  }
  ready_.notify_one();
}

void OrderedWorker::loop() {
  for (;;) {
    std::pair<Task, Done> task;
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
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
}

}  // namespace trainrun::c10d
