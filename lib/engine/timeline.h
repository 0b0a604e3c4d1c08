// Timeline: records what the engine does to each tensor and writes it as a
// Chrome-trace JSON file from its own thread, so the engine thread only
// appends to a queue. Rows are tensors (names the engine makes up, like
// "#core.7", share one row per kind). The file is a complete JSON array once
// the Timeline is destroyed. record calls come from one thread (the
// engine's); the writer thread is internal.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "lib/engine/timeline_event.h"

namespace trainrun::detail {

class Timeline {
 public:
  using Args = std::vector<std::pair<std::string, std::string>>;
  using Clock = std::chrono::steady_clock;

  // The error's text ("No space left on device"); called once at most, from
  // the writer thread or the destructor.
  using OnFailure = std::function<void(const std::string& error)>;

  // Creates or truncates `path`; throws Error(Io) naming it.
  explicit Timeline(const std::string& path, OnFailure on_failure = {});
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  // `at` defaults to now; spans nest per tensor and must be closed in order.
  void begin(const std::string& tensor, const std::string& phase, Args args = {}, Clock::time_point at = Clock::now());
  void end(const std::string& tensor, const std::string& phase, Clock::time_point at = Clock::now());
  void mark(const std::string& tensor, const std::string& what, Clock::time_point at = Clock::now());

 private:
  void record(TimelineEvent::Phase phase, const std::string& tensor, const std::string& name, Args args,
              Clock::time_point at);
  int row(const std::string& tensor);
  void write_loop();
  // Writes unless a write failed already; false once one has.
  bool put(const char* text);
  void failed(int error);

  std::FILE* file_;
  const std::string path_;
  const OnFailure on_failure_;
  bool failed_ = false;  // writer thread, then the destructor
  const Clock::time_point start_ = Clock::now();
  std::map<std::string, int> rows_;  // engine thread only
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<TimelineEvent> queue_;
  bool stop_ = false;
  std::thread writer_;
};

}  // namespace trainrun::detail
