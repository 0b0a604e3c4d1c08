// StragglerMonitor: the engine's straggler statistics at work
// (StragglerTracker holds the logic): it measures each cycle's waits, runs
// the tracker's exchange on the backend every window (and once more when
// the ranks agree to shut down; before the cycle's ops run, so that the
// engine needs one hook), and on rank 0 prints the warning
// (--straggler-warning) and publishes the table and the moment of the
// job's first op to the launcher's rendezvous store (job/stragglers,
// job/first_op), which puts them in the JSON report. Engine thread only;
// publishing failures are ignored (the store is optional).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "lib/engine/coordinator.h"
#include "lib/engine/straggler_tracker.h"
#include "contract/world.h"

namespace trainrun::rendezvous {
class Store;
}

namespace trainrun::detail {

class StragglerMonitor {
 public:
  using Clock = std::chrono::steady_clock;
  // This rank's submission time of the op named so; nullopt when it has none.
  using Submitted = std::function<std::optional<Clock::time_point>(const std::string& name)>;

  // warning_pct 0: no warning (the table is still kept).
  StragglerMonitor(const World& world, Backend& backend, double warning_pct, std::size_t window);
  ~StragglerMonitor();

  // Every cycle on every rank, with its ready ops before they run, at
  // `ready`; runs the exchange when a window is full, or with `final` (the
  // ranks agreed to shut down) for what the window holds.
  void observe(const std::vector<Response>& responses, const Submitted& submitted, Clock::time_point ready, bool final);

 private:
  void record(const std::vector<Response>& responses, const Submitted& submitted, Clock::time_point ready);
  void exchange();
  void publish(const std::string& key, const std::string& value);

  const int rank_;
  const int size_;
  const std::string hostname_;
  const World world_;
  Backend& backend_;
  const double warning_pct_;
  StragglerTracker tracker_;
  std::vector<std::string> hosts_;  // every rank's, after the first exchange
  bool ran_ops_ = false;
  bool first_op_published_ = false;
  std::optional<Clock::time_point> last_warning_;
  std::unique_ptr<rendezvous::Store> store_;  // rank 0, once it publishes
  bool store_failed_ = false;
};

}  // namespace trainrun::detail
