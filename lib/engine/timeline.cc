#include "lib/engine/timeline.h"

#include <cerrno>

#include "rendezvous/net.h"
#include "trainrun/error.h"

namespace trainrun::detail {

Timeline::Timeline(const std::string& path) : file_(std::fopen(path.c_str(), "w")) {
  if (!file_) {
    throw Error(Error::Code::Io, "timeline: cannot write '" + path + "': " + net::errno_text(errno));
  }
  std::fputs("[\n", file_);
  writer_ = std::thread([this] { write_loop(); });
}

Timeline::~Timeline() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  writer_.join();
  std::fputs("\n]\n", file_);
  std::fclose(file_);
}

void Timeline::begin(const std::string& tensor, const std::string& phase, Args args,
                     Clock::time_point at) {
  record(TimelineEvent::Phase::Begin, tensor, phase, std::move(args), at);
}

void Timeline::end(const std::string& tensor, const std::string& phase, Clock::time_point at) {
  record(TimelineEvent::Phase::End, tensor, phase, {}, at);
}

void Timeline::mark(const std::string& tensor, const std::string& what, Clock::time_point at) {
  record(TimelineEvent::Phase::Instant, tensor, what, {}, at);
}

int Timeline::row(const std::string& tensor) {
  // Numbered names the engine makes up ("#core.7", "#barrier.2") share a row.
  std::string key = tensor;
  const std::size_t dot = tensor.rfind('.');
  if (!tensor.empty() && tensor[0] == '#' && dot != std::string::npos && dot + 1 < tensor.size() &&
      tensor.find_first_not_of("0123456789", dot + 1) == std::string::npos) {
    key.erase(dot);
  }
  const auto [it, added] = rows_.emplace(key, static_cast<int>(rows_.size()) + 1);
  if (added) {
    std::lock_guard lock(mutex_);
    queue_.push_back({TimelineEvent::Phase::Metadata, "process_name", 0, it->second, {{"name", key}}});
    queue_.push_back({TimelineEvent::Phase::Metadata, "process_sort_index", 0, it->second,
                      {{"sort_index", std::to_string(it->second)}}});
  }
  return it->second;
}

void Timeline::record(TimelineEvent::Phase phase, const std::string& tensor, const std::string& name,
                      Args args, Clock::time_point at) {
  const int pid = row(tensor);
  const auto ts = std::chrono::duration_cast<std::chrono::microseconds>(at - start_).count();
  {
    std::lock_guard lock(mutex_);
    queue_.push_back({phase, name, ts, pid, std::move(args)});
  }
  wake_.notify_one();
}

void Timeline::write_loop() {
  bool first = true;
  std::vector<TimelineEvent> batch;
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    batch.swap(queue_);
    const bool stopping = stop_;
    lock.unlock();
    for (const auto& event : batch) {
      if (!first) std::fputs(",\n", file_);
      first = false;
      std::fputs(to_json(event).c_str(), file_);
    }
    std::fflush(file_);
    batch.clear();
    lock.lock();
    if (stopping && queue_.empty()) return;
  }
}

}  // namespace trainrun::detail
