#include "cli/elastic/elastic_driver.h"

#include <sys/wait.h>

#include <algorithm>
#include <sstream>

#include "cli/elastic/partition.h"
#include "cli/plan/host_list.h"
#include "cli/plan/printable.h"
#include "contract/decimal.h"
#include "rendezvous/kv_table.h"

namespace trainrun::cli::elastic {
namespace ep = elastic_protocol;
namespace {

std::string table_key(std::string_view key) { return std::string(ep::kScope) + "/" + std::string(key); }

std::string seconds(std::chrono::milliseconds d) { return detail::shortest_decimal(d.count() / 1000.0) + " s"; }

std::string host_list(const std::vector<std::string>& hosts) {
  std::string out;
  for (const std::string& h : hosts) out += (out.empty() ? "" : ", ") + h;
  return out;
}

}  // namespace

ElasticDriver::ElasticDriver(DriverOptions options, std::vector<HostSlots> hosts, const std::vector<RankSlot>& initial,
                             JobState& state, Supervisor& supervisor, rendezvous::KvTable& table, Starter starter,
                             HostSource* discovery)
    : options_(options), state_(state), supervisor_(supervisor), table_(table), starter_(std::move(starter)),
      discovery_(discovery), blacklist_(options.cooldown), hangs_(options.hang_timeout), hosts_(std::move(hosts)) {
  hangs_.settled(Clock::now());
  for (const HostSlots& h : hosts_) host_order_.push_back(display_name(h));
  for (const RankSlot& slot : initial) {
    const std::string& host = host_order_[static_cast<std::size_t>(slot.host_index)];
    workers_[slot.rank] = Worker{host, Phase::Active, false};
    if (std::find(with_agent_.begin(), with_agent_.end(), host) == with_agent_.end()) with_agent_.push_back(host);
  }
  if (discovery_) discovery_version_ = discovery_->version();
  const ep::Assignment first = plan(0, false);
  table_.set(table_key(ep::assignment_key(0)), ep::encode_assignment(first));
  table_.set(table_key(ep::kKeyGeneration), "0");
}

int ElasticDriver::count(Phase phase) const {
  int n = 0;
  for (const auto& [id, w] : workers_) n += w.phase == phase;
  return n;
}

int ElasticDriver::workers_on(const std::string& host) const {
  int n = 0;
  for (const auto& [id, w] : workers_) n += w.host == host && w.phase != Phase::Gone;
  return n;
}

std::vector<Member> ElasticDriver::members(bool with_starting) const {
  std::vector<Member> out;
  for (const auto& [id, w] : workers_) {
    if (w.phase == Phase::Active || (with_starting && w.phase == Phase::Starting)) out.push_back({id, w.host});
  }
  return out;
}

ep::Assignment ElasticDriver::plan(int generation, bool with_starting) const {
  return assign(generation, host_order_, members(with_starting));
}

bool ElasticDriver::absorb_exit(int rank, int raw_status) {
  auto it = workers_.find(rank);
  if (state_.tearing_down() || it == workers_.end() || it->second.phase == Phase::Gone) {
    return it != workers_.end() && it->second.removed;
  }
  Worker& w = it->second;
  const Phase was = w.phase;
  w.phase = Phase::Gone;
  if (WIFEXITED(raw_status) && WEXITSTATUS(raw_status) == 0) {
    finishing_ = true;  // training is over: the others follow
    return false;
  }
  if (finishing_) return false;
  state_.retired(rank, raw_status);
  const std::string what = state_.describe(rank);
  last_failure_[w.host] = Clock::now();
  const bool blacklisted = blacklist_.rank_failed(w.host, Clock::now());
  if (was == Phase::Starting) {
    supervisor_.note("trainrun: elastic: " + what + " before it joined the job");
  } else {
    membership_changed(what, rank);
  }
  if (blacklisted && !state_.tearing_down()) fail_host(w.host, true);
  return true;
}

// The supervisor printed the reason already: the change's line names the host only.
bool ElasticDriver::absorb_host_lost(const std::string& host, const std::string& /*reason*/) {
  if (state_.tearing_down() || finishing_) return false;
  blacklist_.host_lost(host, Clock::now());
  last_failure_[host] = Clock::now();
  with_agent_.erase(std::remove(with_agent_.begin(), with_agent_.end(), host), with_agent_.end());
  if (remove_workers(host)) membership_changed("host " + host + " lost", std::nullopt);
  return true;
}

// The host's workers leave the job; true when some were in it.
bool ElasticDriver::remove_workers(const std::string& host) {
  bool active = false;
  for (auto& [id, w] : workers_) {
    if (w.host != host || w.phase == Phase::Gone) continue;
    active = active || w.phase == Phase::Active;
    w.phase = Phase::Gone;
    w.removed = true;
  }
  return active;
}

// Every worker of a blacklisted host (or one the discovery script no longer
// lists) leaves the job; but the last host with workers stays, new workers
// aside: stopping it would end the job, which is --min-np's business.
void ElasticDriver::fail_host(const std::string& host, bool blacklisted) {
  const auto now = Clock::now();
  const bool others = std::any_of(workers_.begin(), workers_.end(), [&](const auto& entry) {
    return entry.second.host != host && entry.second.phase == Phase::Active;
  });
  if (blacklisted && !others) {
    note_after_cause("blacklisted " + blacklist_.describe(host, now) +
                     ": no new ranks there; its running ranks stay, it is the job's last host");
    return;
  }
  const bool active = remove_workers(host);
  supervisor_.stop_host(host);
  const std::string why =
      blacklisted ? "blacklisted " + blacklist_.describe(host, now) + ": its ranks stop" : discovery_->gone(host);
  if (active) membership_changed(why, std::nullopt);
  else note_after_cause(why);
}

// A membership change's line comes with the next generation (or the wait
// for --min-np): what follows from its cause joins that line, after the
// cause, rather than being printed before it. Alone, it is a line now.
void ElasticDriver::note_after_cause(const std::string& what) {
  if (why_.empty()) supervisor_.note("trainrun: elastic: " + what);
  else why_ += "; " + what;
}

void ElasticDriver::membership_changed(const std::string& why, std::optional<int> cause) {
  ++resets_;
  if (options_.reset_limit >= 0 && resets_ > options_.reset_limit) {
    supervisor_.apply(state_.elastic_failure(
        "elastic: reset limit " + std::to_string(options_.reset_limit) + " (--reset-limit) exceeded: " + why, cause));
    return;
  }
  why_ = why_.empty() ? why : why_ + "; " + why;
  if (cause && !cause_) cause_ = cause;
  if (!publish_at_) publish_at_ = Clock::now() + options_.settle;
}

// The new generation: everyone still in the job, and the new workers that
// have reached the rendezvous.
void ElasticDriver::publish() {
  const ep::Assignment next = plan(generation_ + 1, false);
  if (next.size() < options_.min_np) {
    if (!short_since_) {
      short_since_ = Clock::now();
      supervisor_.note("trainrun: elastic: " + why_ + "; " + std::to_string(next.size()) +
                       " worker(s) left, --min-np " + std::to_string(options_.min_np) + " required: waiting up to " +
                       seconds(options_.elastic_timeout) + " for slots (--elastic-timeout)");
    }
    return;
  }
  short_since_.reset();
  publish_at_.reset();
  ++generation_;
  table_.set(table_key(ep::assignment_key(generation_)), ep::encode_assignment(next));
  table_.set(table_key(ep::kKeyGeneration), std::to_string(generation_));
  std::vector<std::string> hosts;
  for (const ep::Slot& s : next.slots) {
    if (std::find(hosts.begin(), hosts.end(), s.host) == hosts.end()) hosts.push_back(s.host);
  }
  supervisor_.note("trainrun: elastic: " + why_ + "; generation " + std::to_string(generation_) + ": " +
                   std::to_string(next.size()) + " rank(s) on " + std::to_string(hosts.size()) + " host(s)");
  why_.clear();
  cause_.reset();
  hangs_.settled(Clock::now());
}

bool ElasticDriver::usable(const std::string& host) const {
  const auto now = Clock::now();
  if (blacklist_.blocked(host, now)) return false;
  const auto failed = last_failure_.find(host);
  if (failed == last_failure_.end()) return true;
  // Below --min-np, the job's only host takes a new worker in place of a
  // failed one (until its failures blacklist it): else the job could only
  // wait out --elastic-timeout for a host that will never come.
  if (hosts_.size() == 1 && count(Phase::Active) < options_.min_np) return true;
  return options_.cooldown.count() > 0 && now - failed->second >= options_.cooldown;
}

// Free slots of usable hosts get new workers, up to --max-np; one batch at
// a time, so a batch joins in one generation.
void ElasticDriver::fill() {
  if (finishing_ || count(Phase::Starting) > 0) return;
  int room = options_.max_np - count(Phase::Active);
  for (const HostSlots& h : hosts_) {
    const std::string name = display_name(h);
    const int n = std::min(room, h.slots - workers_on(name));
    if (n <= 0 || !usable(name)) continue;
    start_workers(h, n);
    room -= n;
  }
}

void ElasticDriver::start_workers(const HostSlots& host, int n) {
  const std::string name = display_name(host);
  std::unique_ptr<AgentLink> agent;
  if (std::find(with_agent_.begin(), with_agent_.end(), name) == with_agent_.end()) {
    std::string error;
    agent = starter_.start_agent(host, &error);
    if (!agent) {
      supervisor_.note("trainrun: elastic: cannot start an agent on " + name + ": " + error);
      blacklist_.host_lost(name, Clock::now());
      last_failure_[name] = Clock::now();
      return;
    }
    with_agent_.push_back(name);
  }
  if (std::find(host_order_.begin(), host_order_.end(), name) == host_order_.end()) host_order_.push_back(name);
  std::vector<int> ids;
  for (int i = 0; i < n; ++i) {
    ids.push_back(state_.add_rank(name));
    workers_[ids.back()] = Worker{name, Phase::Starting, false};
  }
  // Their environment: the places they would have if they joined now.
  const ep::Assignment next = plan(generation_ + 1, true);
  JobSpec spec = starter_.job_template;
  for (int id : ids) {
    const ep::Slot& s = *next.find(id);
    const RankSlot slot{s.rank, 0, host.host, s.local_rank, s.local_size, s.cross_rank, s.cross_size};
    spec.ranks.push_back(starter_.rank_spec(slot, next.size(), id));
  }
  if (agent) supervisor_.add_agent(std::move(agent), spec);
  else supervisor_.add_ranks(name, spec);
  supervisor_.note("trainrun: elastic: starting " + std::to_string(n) + " worker(s) on " + name);
}

// A batch of new workers joins once every one of them reached the rendezvous.
void ElasticDriver::include_ready() {
  std::vector<int> starting;
  for (const auto& [id, w] : workers_) {
    if (w.phase == Phase::Starting) starting.push_back(id);
  }
  if (starting.empty()) return;
  for (int id : starting) {
    if (!table_.get(table_key(ep::ready_key(id)))) return;
  }
  for (int id : starting) workers_[id].phase = Phase::Active;
  membership_changed(
      std::to_string(starting.size()) + " new worker(s) on " + workers_[starting[0]].host +
          (starting.size() > 1 && workers_[starting.back()].host != workers_[starting[0]].host ? " and other hosts"
                                                                                               : ""),
      std::nullopt);
}

void ElasticDriver::update_hosts(const std::vector<HostSlots>& hosts) {
  for (const HostSlots& old : hosts_) {
    const std::string name = display_name(old);
    const auto listed =
        std::find_if(hosts.begin(), hosts.end(), [&](const HostSlots& h) { return display_name(h) == name; });
    if (listed == hosts.end() && workers_on(name) > 0) fail_host(name, false);
    else if (listed != hosts.end()) shrink_host(name, listed->slots);
  }
  hosts_ = hosts;
}

// The discovery script lowered a host's slots: as in Horovod, the workers
// beyond them leave, those with the highest local ranks (the newest: local
// ranks follow worker ids), killed at once; the rest re-form without them.
void ElasticDriver::shrink_host(const std::string& host, int slots) {
  int excess = workers_on(host) - slots;
  if (excess <= 0) return;
  std::string names;
  bool active = false;
  for (auto it = workers_.rbegin(); it != workers_.rend() && excess > 0; ++it) {
    Worker& w = it->second;
    if (w.host != host || w.phase == Phase::Gone) continue;
    active = active || w.phase == Phase::Active;
    names += (names.empty() ? "" : ", ") + std::to_string(it->first);
    w.phase = Phase::Gone;
    w.removed = true;
    hangs_.forget(it->first);
    supervisor_.kill_rank(host, it->first);
    --excess;
  }
  const std::string why = "the discovery script lowered " + host + " to " + std::to_string(slots) +
                          " slot(s): worker(s) " + names + " stop";
  if (active) membership_changed(why, std::nullopt);
  else supervisor_.note("trainrun: elastic: " + why);
}

void ElasticDriver::check_short() {
  if (!short_since_ || Clock::now() - *short_since_ < options_.elastic_timeout) return;
  int available = count(Phase::Active);
  for (const HostSlots& h : hosts_) {
    if (usable(display_name(h))) available += std::max(0, h.slots - workers_on(display_name(h)));
  }
  supervisor_.apply(state_.elastic_failure("elastic: " + std::to_string(available) + " slot(s) available, " +
                                               std::to_string(options_.min_np) + " required (--min-np); waited " +
                                               seconds(options_.elastic_timeout) + " (--elastic-timeout)",
                                           std::nullopt));
}

// Heartbeats are read on every tick, but judged only while the job is
// settled: during a re-form, or while it waits for --min-np, workers are
// between generations and beat no more.
void ElasticDriver::check_hung(Clock::time_point now) {
  for (const auto& [id, w] : workers_) {
    if (w.phase == Phase::Active) hangs_.beat(id, table_.get(table_key(ep::alive_key(id))), now);
  }
  if (finishing_ || publish_at_ || short_since_) return;
  for (int id : hangs_.hung(now)) {
    const auto it = workers_.find(id);
    if (it != workers_.end() && it->second.phase == Phase::Active) remove_hung(id, now);
  }
  if (!publish_at_) check_partition(now);
  if (!publish_at_) check_left();
}

// Host pairs that cannot reach each other, as the workers stuck for the hang
// timeout report them (reach.{w} = "STUCK_MS W ...").
std::set<std::pair<std::string, std::string>> ElasticDriver::reported_cuts() const {
  std::set<std::pair<std::string, std::string>> cuts;
  for (const auto& [id, w] : workers_) {
    const auto unreachable = stuck_report(id);
    if (!unreachable) continue;
    for (int other : *unreachable) {
      const auto it = workers_.find(other);
      if (it != workers_.end() && it->second.phase == Phase::Active && it->second.host != w.host) {
        cuts.insert(std::minmax(w.host, it->second.host));
      }
    }
  }
  return cuts;
}

// The workers an active worker could not reach, by its reach.{w} report
// ("STUCK_MS W ..."), once it has been stuck for the hang timeout; nullopt
// before that, without a report, or with the hang timeout off.
std::optional<std::vector<int>> ElasticDriver::stuck_report(int id) const {
  const auto w = workers_.find(id);
  if (options_.hang_timeout.count() <= 0 || w == workers_.end() || w->second.phase != Phase::Active) return {};
  const auto report = table_.get(table_key(ep::reach_key(id)));
  if (!report) return {};
  std::istringstream words(*report);
  long long stuck_ms = 0;
  if (!(words >> stuck_ms) || stuck_ms < options_.hang_timeout.count()) return {};
  std::vector<int> unreachable;
  for (int other; words >> other;) unreachable.push_back(other);
  return unreachable;
}

// Reports acted upon: each worker's next report starts afresh.
void ElasticDriver::forget_reach_reports() {
  for (const auto& [id, w] : workers_) table_.set(table_key(ep::reach_key(id)), "0");
}

// A partition the launcher sees across: the side that can go on does, the
// others' workers stop and their hosts count as lost.
void ElasticDriver::check_partition(Clock::time_point now) {
  const auto cuts = reported_cuts();
  if (cuts.empty()) return;
  const ep::Assignment current = plan(generation_, false);
  std::vector<Member> in_rank_order;
  for (const ep::Slot& s : current.slots) in_rank_order.push_back({s.worker, s.host});
  const auto decision = resolve_partition(in_rank_order, cuts, options_.min_np);
  if (!decision) return;
  std::vector<std::string> dropped;
  int dropped_workers = 0;
  for (const PartitionSide& side : decision->drop) {
    dropped.insert(dropped.end(), side.hosts.begin(), side.hosts.end());
    dropped_workers += side.workers;
  }
  for (const std::string& host : dropped) {
    blacklist_.host_lost(host, now);
    last_failure_[host] = now;
    remove_workers(host);
    supervisor_.stop_host(host);
  }
  forget_reach_reports();
  const std::string keep = host_list(decision->keep.hosts);
  membership_changed("network partition: " + keep + " (" + std::to_string(decision->keep.workers) + " worker(s)) and " +
                         host_list(dropped) + " (" + std::to_string(dropped_workers) + ") cannot reach each other; " +
                         keep + " go(es) on (" + (decision->tie ? "as many workers, and rank 0" : "more workers") +
                         "), the workers on " + host_list(dropped) + " stop",
                     std::nullopt);
}

// A worker that left the current generation on its own (left.{w}: its
// collective timed out or lost a connection) while no member is lost waits
// for a next generation that nothing else would publish. Once it has been
// stuck for the hang timeout and reached every peer (no partition to
// resolve), the same workers re-form.
void ElasticDriver::check_left() {
  const std::string generation = std::to_string(generation_);
  for (const auto& [id, w] : workers_) {
    const auto unreachable = stuck_report(id);
    if (!unreachable || !unreachable->empty()) continue;
    const auto left = table_.get(table_key(ep::left_key(id)));
    if (!left || left->rfind(generation + " ", 0) != 0) continue;
    forget_reach_reports();
    membership_changed(state_.who(id) + " left generation " + generation + " (" +
                           printable(left->substr(generation.size() + 1), 300) +
                           ") and reaches every peer: the same workers re-form",
                       std::nullopt);
    return;
  }
}

// SIGKILL for it alone (SIGTERM would wait for a stopped process); its host
// counts a failure, so a host where this repeats is blacklisted.
void ElasticDriver::remove_hung(int id, Clock::time_point now) {
  Worker& w = workers_[id];
  w.phase = Phase::Gone;
  w.removed = true;
  hangs_.forget(id);
  supervisor_.kill_rank(w.host, id);
  last_failure_[w.host] = now;
  const bool blacklisted = blacklist_.rank_failed(w.host, now);
  membership_changed(state_.who(id) + " made no progress for " + seconds(options_.hang_timeout) +
                         " (no heartbeat: stopped or frozen; --elastic-hang-timeout), killed with SIGKILL",
                     std::nullopt);
  if (blacklisted) fail_host(w.host, true);
}

void ElasticDriver::tick() {
  if (state_.tearing_down()) return;
  const auto now = Clock::now();
  if (discovery_) {
    if (auto failure = discovery_->take_failure()) {
      supervisor_.note("trainrun: elastic: " + *failure + " (keeping the hosts it listed before)");
    }
    if (discovery_->version() != discovery_version_) {
      discovery_version_ = discovery_->version();
      update_hosts(discovery_->hosts());
    }
  }
  for (const std::string& host : blacklist_.released(now)) {
    last_failure_.erase(host);
    supervisor_.note("trainrun: elastic: host " + host + " may be used again (--blacklist-cooldown over)");
  }
  include_ready();
  fill();
  check_hung(now);
  if (publish_at_ && now >= *publish_at_) publish();
  check_short();
}

bool ElasticDriver::idle() const { return !publish_at_ && count(Phase::Starting) == 0; }

}  // namespace trainrun::cli::elastic
