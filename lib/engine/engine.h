// Engine: the coordination engine of one Communicator (trainrun/engine.h).
// A thread-safe front (submit, poll, wait) queues Work; a background thread
// runs negotiation cycles, a cycle time apart while ops keep coming (the
// batching window), or at once when work reaches an idle engine:
//   1. one status allreduce (CycleStatus): response-cache hits, "I have
//      requests to report", shutdown and stall flags;
//   2. only when some rank has something new: two allgathers carry every
//      rank's new requests to every rank's Coordinator, which all decide
//      alike which ops are ready and which disagree;
//   3. the ready ops run (Executor), fused per the FusionPlanner, in the
//      same order on every rank.
// The engine talks to the Backend only, from its own thread; while it runs,
// the Communicator's core calls come through run_core(), so backend calls
// never interleave. Destroying the Engine asks every rank to stop at the
// next cycle and waits for its thread. A watchdog thread covers what the
// cycle cannot see while it is stuck in the status allreduce (another
// rank's engine not started, or stuck): it warns, and past the stall
// shutdown time (or 10 s into a shutdown) aborts the backend.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "backends/backend.h"
#include "lib/engine/coordinator.h"
#include "lib/engine/cycle_status.h"
#include "lib/engine/engine_options.h"
#include "lib/engine/executor.h"
#include "lib/engine/rank_names.h"
#include "lib/engine/response_cache.h"
#include "lib/engine/stall_inspector.h"
#include "lib/engine/straggler_monitor.h"
#include "lib/engine/timeline.h"
#include "lib/engine/work.h"
#include "contract/world.h"

namespace trainrun::detail {

class Engine {
 public:
  // Records into `timeline` whenever it is active (its owner, the
  // Communicator, starts and stops it); rank 0 starts it on
  // options.timeline_path. Throws Error when the options are unusable
  // (e.g. the timeline file).
  Engine(const World& world, Backend& backend, EngineOptions options, Timeline& timeline);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  int size() const { return size_; }
  // False once the engine stopped (shutdown agreed, stall, backend failure).
  bool running();

  // Queues `work` (checked by the caller; Core and Barrier names are
  // assigned here). Throws Error(InvalidArgument) if its name is in flight,
  // or the error that stopped the engine.
  Handle submit(Work work);
  bool poll(Handle handle);
  // Waits, forgets the handle, rethrows the op's error (unprefixed).
  Output wait(Handle handle);
  // Runs `body` (a Communicator call on the backend) on the engine thread
  // once every rank reached the same core call; `request` describes it for
  // the mismatch check.
  void run_core(Request request, std::function<void()> body);
  int join();

 private:
  using Clock = std::chrono::steady_clock;

  std::shared_ptr<Operation> await(Handle handle);
  void loop();
  bool cycle();
  // Takes new work, sorts it into cache hits and requests to report, and
  // fills this rank's status bytes.
  CycleStatus prepare(Clock::time_point now, std::vector<std::string>& to_report);
  // The cached ops every rank is ready for; waiters whose slot went stale
  // join to_report.
  std::vector<Response> take_cached(const CycleStatus& status, std::vector<std::string>& to_report);
  void classify(const std::string& name, std::vector<std::string>& to_report, std::vector<std::size_t>& stale);
  void negotiate(const std::vector<std::string>& to_report, Clock::time_point now, std::vector<Response>& responses);
  // After a cycle's negotiation: when rank 0 found every rank stuck for the
  // stall warning time (the status says so), the coordinator's pending ops
  // fail on every rank (Coordinator::fail_out_of_step); rank 0 notes
  // whether the ranks are stuck now.
  void out_of_step(const CycleStatus& status, Clock::time_point now, std::vector<Response>& responses);
  void fail_out_of_step(std::vector<Response>& responses);
  void execute(const std::vector<Response>& responses);
  Work* local_work(const std::string& name);
  // Completes the ops of these responses (the error, if any, is theirs).
  void finish(const std::vector<const Response*>& done);
  void complete(Operation& op);             // under mutex_
  void release_names(const Operation& op);  // under mutex_
  void stop(const Error& reason);
  void watch();
  void trace_report(int from, const Request& r, Clock::time_point now);
  void trace_ready(const Response& response, Clock::time_point now);

  const int rank_;
  const int size_;
  const RankNames names_;  // job ranks and the process set, for messages
  const std::string hostname_;
  const bool elastic_;
  Backend& backend_;
  const EngineOptions options_;

  // Shared with submitting threads.
  std::mutex mutex_;
  std::condition_variable done_;
  std::vector<Work> incoming_;
  std::set<std::string> in_flight_;
  std::unordered_map<std::uint64_t, std::shared_ptr<Operation>> handles_;
  // Process-wide: a handle never names an op of another engine (a process
  // set's), so callers may keep one table of handles.
  static inline std::atomic<std::uint64_t> next_handle_{1};
  std::uint64_t next_core_ = 0;     // "#core.N": the Nth core call since the last join
  std::uint64_t next_barrier_ = 0;  // "#barrier.N"
  bool stop_requested_ = false;
  bool idle_ = false;  // the engine thread waits for work with nothing pending
  int waiters_ = 0;    // callers blocked on an op that is not done yet
  std::condition_variable work_arrived_;
  std::optional<Error> stopped_;
  std::optional<Clock::time_point> blocked_since_;  // the engine thread is in the status allreduce
  std::uint64_t cycles_answered_ = 0;               // status allreduces completed: every rank's engine answered
  std::string abort_reason_;                        // why the watchdog aborted the backend
  std::condition_variable watch_wake_;

  // Engine thread only.
  std::map<std::string, Work> pending_;
  std::vector<std::string> retry_;  // lost their cache slot: classify again
  bool joined_ = false;
  // The next cycle may start at once for a waiting caller: false only after
  // a cycle in which every rank had a waiter and none of them was served.
  bool hurry_ = true;
  Coordinator coordinator_;
  ResponseCache cache_;
  StallInspector stall_;
  StragglerMonitor stragglers_;
  std::optional<Clock::time_point> stuck_since_;  // rank 0: every rank waits, nothing can complete
  Timeline& timeline_;                            // outlives the engine
  std::set<std::string> negotiating_;             // names with an open NEGOTIATE span
  Executor executor_;
  std::thread thread_;
  std::thread watchdog_;
};

}  // namespace trainrun::detail
