#include "lib/engine/straggler_monitor.h"

#include <cstdio>
#include <cstring>

#include "lib/rendezvous_client.h"
#include "contract/kv_keys.h"

namespace trainrun::detail {
namespace {

constexpr std::size_t kHostBytes = 64;  // of a hostname in the one-time exchange
constexpr auto kWarningInterval = std::chrono::seconds(60);

}  // namespace

StragglerMonitor::StragglerMonitor(const World& world, Backend& backend, double warning_pct, std::size_t window)
    : rank_(world.rank), size_(world.size), hostname_(world.hostname), world_(world), backend_(backend),
      warning_pct_(warning_pct), tracker_(world.rank, world.size, window) {}

StragglerMonitor::~StragglerMonitor() = default;

void StragglerMonitor::observe(const std::vector<Response>& responses, const Submitted& submitted,
                               Clock::time_point ready, bool final) {
  record(responses, submitted, ready);
  if (rank_ == 0 && !first_op_published_ && ran_ops_) {
    first_op_published_ = true;
    publish(std::string(contract::kKeyFirstOp), hostname_);
  }
  if (tracker_.exchange_due() || (final && tracker_.recorded() > 0)) exchange();
}

void StragglerMonitor::record(const std::vector<Response>& responses, const Submitted& submitted,
                              Clock::time_point ready) {
  if (responses.empty()) return;
  ran_ops_ = true;
  if (size_ < 2 || size_ > StragglerTracker::kMaxRanks) return;
  std::optional<Clock::time_point> latest;
  for (const Response& response : responses) {
    const auto when = submitted(response.request.name);
    if (when && (!latest || *when > *latest)) latest = when;
  }
  if (!latest) return tracker_.record(std::nullopt);
  tracker_.record(std::chrono::duration_cast<std::chrono::microseconds>(ready - *latest));
}

void StragglerMonitor::exchange() {
  std::vector<std::int64_t> data = tracker_.exchange_input();
  backend_.allreduce(data.data(), data.data(), data.size(), DataType::Int64, ReduceOp::Min);
  tracker_.absorb(data);
  if (hosts_.empty()) {
    std::string mine(kHostBytes, '\0'), all(kHostBytes * static_cast<std::size_t>(size_), '\0');
    std::memcpy(mine.data(), hostname_.data(), std::min(hostname_.size(), kHostBytes - 1));
    backend_.allgather(mine.data(), all.data(), kHostBytes, DataType::UInt8);
    for (int r = 0; r < size_; ++r) hosts_.emplace_back(all.c_str() + kHostBytes * static_cast<std::size_t>(r));
  }
  const StragglerTracker::Summary mine = tracker_.summary();
  std::vector<StragglerTracker::Summary> summaries(static_cast<std::size_t>(size_));
  backend_.allgather(mine.data(), summaries.data(), mine.size(), DataType::Float64);
  if (rank_ != 0) return;
  const auto now = Clock::now();
  if (!last_warning_ || now - *last_warning_ >= kWarningInterval) {
    if (auto line = straggler_warning(tracker_.window_last(), tracker_.window_cycles(), tracker_.window(), summaries,
                                      hosts_, warning_pct_)) {
      last_warning_ = now;
      std::fprintf(stderr, "trainrun: %s\n", line->c_str());
    }
  }
  publish(std::string(contract::kKeyStragglers), encode_straggler_table(tracker_.table(summaries, hosts_)));
}

void StragglerMonitor::publish(const std::string& key, const std::string& value) {
  if (store_failed_ || !world_.has_rendezvous()) return;
  try {
    if (!store_) {
      rendezvous::HttpStore::Options options;
      options.connect_deadline = std::chrono::seconds(2);
      options.request_timeout = std::chrono::seconds(5);
      store_ = connect_rendezvous_store(world_, options);
    }
    store_->set(contract::kScopeJob, key, value);
  } catch (const std::exception&) {
    store_failed_ = true;  // the report lacks the table; the job goes on
  }
}

}  // namespace trainrun::detail
