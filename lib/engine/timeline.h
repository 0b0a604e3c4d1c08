// Timeline: records what the engine does to each tensor and writes it as a
// Chrome-trace JSON file from its own thread, so the engine thread only
// appends to a queue. It can be started, switched to another file and
// stopped at any time (hvd.start_timeline / stop_timeline); every file it
// closes is a complete JSON array whose spans pair up: spans still open when
// a file closes end there, and an end whose begin went to an earlier file is
// dropped. Rows are tensors (names the engine makes up, like "#core.7", share
// one row per kind). Each file opens, as Horovod's do, with a metadata event
// carrying start_time_since_epoch_in_micros, the wall-clock time of ts 0.
// Thread safety: begin, end, mark and mark_cycle come from one thread (the
// engine's); start, stop, active and marking_cycles from any thread; the
// writer thread (started with the first file) is internal.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
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

  // The file and the error's text ("No space left on device"); called at
  // most once per file, from the writer thread.
  using OnFailure = std::function<void(const std::string& path, const std::string& error)>;

  // Writes nothing until start().
  explicit Timeline(OnFailure on_failure = {});
  // Closes the file being written, if any.
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  // Creates or truncates `path` and records into it from now on; the file
  // being written, if any, is closed first (complete) before this returns.
  // The same path as the one being written changes only mark_cycles.
  // mark_cycles: a CYCLE_START mark at every negotiation cycle.
  // Throws Error(Io) naming the path; then nothing changes.
  void start(const std::string& path, bool mark_cycles = false);
  // Closes the file being written (complete) before it returns; nothing
  // when none is.
  void stop();
  // Whether events are recorded: callers skip building them otherwise.
  bool active() const { return active_.load(std::memory_order_relaxed); }
  bool marking_cycles() const { return mark_cycles_.load(std::memory_order_relaxed); }

  // `at` defaults to now; spans nest per tensor and must be closed in order.
  void begin(const std::string& tensor, const std::string& phase, Args args = {}, Clock::time_point at = Clock::now());
  void end(const std::string& tensor, const std::string& phase, Clock::time_point at = Clock::now());
  void mark(const std::string& tensor, const std::string& what, Clock::time_point at = Clock::now());
  // "CYCLE_START", across the whole trace.
  void mark_cycle(Clock::time_point at = Clock::now());

 private:
  // What the writer thread does next, in order.
  struct Entry {
    enum class Kind { Event, Open, Close } kind = Kind::Event;
    std::string tensor;         // Event: its row ("" for a mark across the trace)
    TimelineEvent event;        // Event; its ts for Close
    std::FILE* file = nullptr;  // Open
    std::string path;           // Open
  };
  // The file being written, as the writer thread sees it.
  struct File {
    std::FILE* handle = nullptr;
    std::string path;
    bool failed = false;
    bool first = true;                // nothing written after "[" yet
    std::map<std::string, int> rows;  // row key -> pid
    std::map<int, int> open_spans;    // pid -> spans begun and not ended
  };

  std::int64_t micros(Clock::time_point at) const;
  void push(Entry entry);
  // Waits until the writer has handled everything queued so far.
  void drain(std::unique_lock<std::mutex>& lock);
  void record(TimelineEvent::Phase phase, const std::string& tensor, const std::string& name, Args args,
              Clock::time_point at);

  // Writer thread.
  void write_loop();
  void handle(Entry& entry);
  void write_event(const std::string& tensor, TimelineEvent event);
  int row(const std::string& tensor);
  void close_file(std::int64_t ts_us);
  // Writes unless a write to this file failed already; false once one has.
  bool put(const std::string& text);
  void failed(int error);

  const OnFailure on_failure_;
  const Clock::time_point start_ = Clock::now();
  const std::int64_t start_epoch_us_;  // wall-clock microseconds at start_
  std::atomic<bool> active_{false};
  std::atomic<bool> mark_cycles_{false};
  std::mutex calls_;  // start and stop, one at a time

  std::mutex mutex_;
  std::condition_variable wake_;     // the writer: entries or stop
  std::condition_variable drained_;  // callers of start and stop
  std::vector<Entry> queue_;
  std::uint64_t queued_ = 0;   // entries ever queued
  std::uint64_t written_ = 0;  // entries the writer has handled
  std::string path_;           // the file callers asked for last; empty: none
  bool stop_ = false;
  std::thread writer_;

  File file_;  // writer thread only
};

}  // namespace trainrun::detail
