// HangDetector: which workers of an elastic job stopped making progress.
// Every worker's process rewrites its heartbeat in the rendezvous
// (alive.{w}, contract/elastic_protocol.h) every 500 ms while it is in a
// generation; the driver feeds what it reads here on each tick. A worker
// whose heartbeat has not changed for the hang timeout is hung: a stopped
// (SIGSTOP) or frozen process, alive to the agent but silent to its peers,
// which wait for it in their collectives. The timeout counts from the
// worker's last change or from the last time the job settled into a new
// generation, whichever is later, since a re-form pauses every heartbeat;
// a worker that never beat yet is not judged (it is starting, which the
// start timeout watches). Each hung worker is reported once.
// Pure: time comes in as an argument; not thread-safe (the driver's thread).
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace trainrun::cli::elastic {

class HangDetector {
 public:
  using Clock = std::chrono::steady_clock;

  // timeout 0: never hung.
  explicit HangDetector(std::chrono::milliseconds timeout) : timeout_(timeout) {}

  // What worker's heartbeat holds now (nullopt: nothing written yet).
  void beat(int worker, const std::optional<std::string>& value, Clock::time_point now);
  // A new generation was published at `now`: every worker may take up to
  // the timeout to join it and beat again.
  void settled(Clock::time_point now) { settled_ = now; }
  void forget(int worker) { workers_.erase(worker); }
  // Workers hung at `now`, in id order; each is returned once.
  std::vector<int> hung(Clock::time_point now);
  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  struct Beat {
    std::string value;
    Clock::time_point changed;
    bool reported = false;
  };

  std::chrono::milliseconds timeout_;
  Clock::time_point settled_{};
  std::map<int, Beat> workers_;  // those that beat at least once
};

}  // namespace trainrun::cli::elastic
