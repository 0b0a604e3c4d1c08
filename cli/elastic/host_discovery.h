// Elastic host discovery: a user's script that prints the hosts available
// now, in exactly a hostfile's format (cli/plan/host_list.h), run once at start
// and then polled, so that the elastic driver sees hosts come and go.
// run_discovery_script() is one run (I/O only: fork/exec, no shell, no
// signal-handling changes); HostDiscovery polls it from a thread of its own
// and keeps the newest good answer, thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cli/mode/host_source.h"
#include "cli/plan/rank_plan.h"
#include "os/unique_fd.h"

namespace trainrun::cli::elastic {

struct DiscoveryRun {
  bool ok = false;
  std::vector<HostSlots> hosts;  // when ok
  // When !ok, one line naming the script: "--host-discovery-script PATH
  // exited with code 3: <its first stderr line>", "... was killed by SIGKILL",
  // "... did not finish within 10 s", "... cannot be executed: <strerror>",
  // "... printed a bad line: stdout:2: ...", "... listed no hosts"; rarer:
  // "... printed more than 1 MiB", "... cannot be started: <strerror>" (no
  // pipes), "... was stopped" (by stop_fd).
  std::string error;
  std::string stderr_text;  // the script's whole stderr (at most 64 KiB), for the launcher to print
};

// What a run keeps of the script's output; the rest is read and dropped so
// the script never blocks on a full pipe.
inline constexpr std::size_t kMaxDiscoveryStdout = 1u << 20;
inline constexpr std::size_t kMaxDiscoveryStderr = 64u << 10;

// Runs the script once: exec of `path` itself (argv = {path}), stdin
// /dev/null, in a session of its own; at `timeout` it is killed with all it
// started. Waits for that specific pid, so no zombie is left and no SIGCHLD
// handling is needed. Callable from any thread.
DiscoveryRun run_discovery_script(const std::string& path, std::chrono::milliseconds timeout);
// The same, also ended (killed, error "... was stopped") as soon as `stop_fd`
// becomes readable: how HostDiscovery's destructor cuts a running script short.
// `default_slots`: a listed host without any (horovodrun's --slots-per-host).
DiscoveryRun run_discovery_script(const std::string& path, std::chrono::milliseconds timeout, int stop_fd,
                                  int default_slots = 1);

// Polls the script every `interval` in a background thread (the first run
// is synchronous, in first()). All members are thread-safe.
class HostDiscovery final : public HostSource {
 public:
  HostDiscovery(std::string path, std::chrono::milliseconds interval,
                std::chrono::milliseconds timeout = std::chrono::seconds(10), int default_slots = 1);
  ~HostDiscovery() override;  // stops the thread (a running script is killed) and joins it
  HostDiscovery(const HostDiscovery&) = delete;
  HostDiscovery& operator=(const HostDiscovery&) = delete;

  // One synchronous run; when ok it becomes the current answer. Its failure
  // is the caller's to report, so take_failure() does not repeat it.
  DiscoveryRun first();
  void start();                                   // background polling from now on; once
  std::vector<HostSlots> hosts() const override;  // the newest good answer (failures keep the last good one)
  std::uint64_t version() const override;         // +1 each time a good answer differs from the previous one
  // The newest failed poll's error line, once per streak of failures (so
  // the launcher warns once, not every interval); nullopt when none is new.
  std::optional<std::string> take_failure() override;
  std::string gone(const std::string& host) const override {
    return "host " + host + " is no longer listed by the discovery script";
  }

 private:
  void poll_loop();
  void record(const DiscoveryRun& run);

  const std::string path_;
  const std::chrono::milliseconds interval_, timeout_;
  const int default_slots_;
  UniqueFd stop_fd_;  // an eventfd, readable once the destructor runs
  std::thread thread_;

  mutable std::mutex mutex_;
  std::vector<HostSlots> hosts_;
  std::uint64_t version_ = 0;
  std::string failure_;         // the newest failure of the current streak
  bool failing_ = false;        // the last poll failed
  bool failure_taken_ = false;  // take_failure() already reported this streak
};

}  // namespace trainrun::cli::elastic
