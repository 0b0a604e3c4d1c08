#include "lib/engine/timeline.h"

#include <cerrno>

#include "rendezvous/net.h"
#include "trainrun/error.h"

namespace trainrun::detail {

Timeline::Timeline(const std::string& path, OnFailure on_failure)
    : file_(std::fopen(path.c_str(), "w")), path_(path), on_failure_(std::move(on_failure)) {
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
  const bool ended = put("\n]\n");
  // The last buffered bytes reach the file only now.
  if (std::fclose(file_) != 0 && ended) failed(errno);
}

bool Timeline::put(const char* text) {
  if (failed_) return false;
  if (std::fputs(text, file_) == EOF) failed(errno);
  return !failed_;
}

void Timeline::failed(int error) {
  failed_ = true;
  const std::string why = net::errno_text(error != 0 ? error : EIO);
  std::fprintf(stderr,
               "trainrun: warning: cannot write %s: %s; the timeline ends there (later engine events are dropped)\n",
               path_.c_str(), why.c_str());
  if (on_failure_) on_failure_(why);
}

void Timeline::begin(const std::string& tensor, const std::string& phase, Args args, Clock::time_point at) {
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
    queue_.push_back({TimelineEvent::Phase::Metadata,
                      "process_sort_index",
                      0,
                      it->second,
                      {{"sort_index", std::to_string(it->second)}}});
  }
  return it->second;
}

void Timeline::record(TimelineEvent::Phase phase, const std::string& tensor, const std::string& name, Args args,
                      Clock::time_point at) {
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
      if (!first) put(",\n");
      first = false;
      put(to_json(event).c_str());
    }
    if (!failed_ && std::fflush(file_) != 0) failed(errno);
    batch.clear();
    lock.lock();
    if (stopping && queue_.empty()) return;
  }
}

}  // namespace trainrun::detail
