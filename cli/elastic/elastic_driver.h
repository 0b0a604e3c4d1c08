// ElasticDriver: what an elastic job (--min-np/--max-np/--host-discovery-
// script) does instead of ending at the first failure. It numbers workers
// (stable ids, the supervisor's rank indices), publishes each generation's
// assignment in the rendezvous table (contract/elastic_protocol.h), and:
//   - a worker that fails (exit != 0, signal) or a lost host: the survivors
//     re-form without it in a new generation (failures within ~100 ms are
//     one change); its host is cooled down, and blacklisted at its second
//     failure (cli/elastic/blacklist.h), which stops its other workers;
//   - free slots (discovery, a cooled-down host) get new workers up to
//     --max-np; once they have all reached the rendezvous (ready.{w}) they
//     join in a new generation, which running workers take at their next
//     State::commit();
//   - a worker whose heartbeat stopped for --elastic-hang-timeout (a
//     stopped or frozen process: its peers wait for it in a collective) is
//     killed with SIGKILL and the others re-form without it; like a failure,
//     it counts towards its host's blacklisting (cli/elastic/hang_detector.h);
//   - a host the discovery script lists with fewer slots loses the workers
//     with the highest local ranks beyond them (killed, as Horovod does);
//   - hosts that cannot reach each other while the launcher reaches them
//     all (a partition: workers stuck for --elastic-hang-timeout report the
//     peers they cannot connect to): the side with the most workers, ties
//     to the one with rank 0, goes on if it meets --min-np; the other
//     side's hosts are stopped and blacklisted as lost (cli/elastic/partition.h);
//   - fewer than --min-np workers for --elastic-timeout, or more changes
//     than --reset-limit: the job ends with one line saying so.
// A worker exiting 0 means training is over: from then on nothing is
// replaced and a failure ends the job as in a plain one. Runs on the
// supervisor's thread (ElasticControl).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cli/agent/agent_link.h"
#include "cli/agent/agent_protocol.h"
#include "cli/elastic/blacklist.h"
#include "cli/elastic/hang_detector.h"
#include "cli/elastic/host_discovery.h"
#include "cli/elastic/membership.h"
#include "cli/job/job_state.h"
#include "cli/plan/rank_plan.h"
#include "cli/job/supervisor.h"

namespace trainrun::rendezvous {
class KvTable;
}

namespace trainrun::cli::elastic {

struct DriverOptions {
  int min_np = 1;
  int max_np = 1;
  int reset_limit = -1;  // -1: no limit
  std::chrono::milliseconds elastic_timeout{600'000};
  std::chrono::milliseconds cooldown{0};           // 0: a failed host is not used again
  std::chrono::milliseconds settle{100};           // failures this close are one change
  std::chrono::milliseconds hang_timeout{30'000};  // no heartbeat this long: hung; 0: never
};

// How the driver starts things, supplied by the launcher.
struct Starter {
  // A RankSpec for worker `worker` placed at `slot` (argv, environment).
  std::function<RankSpec(const RankSlot& slot, int size, int worker)> rank_spec;
  // The job frame for a new host (cwd, grace) without ranks.
  JobSpec job_template;
  // An agent for a host that has none yet; nullptr after `*error` is set.
  std::function<std::unique_ptr<AgentLink>(const HostSlots& host, std::string* error)> start_agent;
};

class ElasticDriver : public ElasticControl {
 public:
  using Clock = std::chrono::steady_clock;

  // `hosts`: every host the job may use now (-H/--hostfile, or the
  // discovery's first answer); `initial`: the ranks started with the job,
  // worker id = rank. Publishes generation 0.
  ElasticDriver(DriverOptions options, std::vector<HostSlots> hosts, const std::vector<RankSlot>& initial,
                JobState& state, Supervisor& supervisor, rendezvous::KvTable& table, Starter starter,
                HostSource* discovery);

  bool absorb_exit(int rank, int raw_status) override;
  bool absorb_host_lost(const std::string& host, const std::string& reason) override;
  void tick() override;
  bool idle() const override;

  int generation() const { return generation_; }

 private:
  enum class Phase { Starting, Active, Gone };
  struct Worker {
    std::string host;
    Phase phase = Phase::Starting;
    bool removed = false;  // stopped by the driver: its exit is no failure
  };

  void fail_host(const std::string& host, bool blacklisted);
  bool remove_workers(const std::string& host);
  void membership_changed(const std::string& why, std::optional<int> cause);
  void note_after_cause(const std::string& what);
  void publish();
  void update_hosts(const std::vector<HostSlots>& hosts);
  void shrink_host(const std::string& host, int slots);
  void fill();
  void start_workers(const HostSlots& host, int n);
  void include_ready();
  void check_short();
  void check_hung(Clock::time_point now);
  void remove_hung(int id, Clock::time_point now);
  void check_partition(Clock::time_point now);
  void check_left();
  std::set<std::pair<std::string, std::string>> reported_cuts() const;
  std::optional<std::vector<int>> stuck_report(int id) const;
  void forget_reach_reports();
  bool usable(const std::string& host) const;
  int count(Phase phase) const;
  int workers_on(const std::string& host) const;
  std::vector<Member> members(bool with_starting) const;
  elastic_protocol::Assignment plan(int generation, bool with_starting) const;

  DriverOptions options_;
  JobState& state_;
  Supervisor& supervisor_;
  rendezvous::KvTable& table_;
  Starter starter_;
  HostSource* discovery_;
  Blacklist blacklist_;
  HangDetector hangs_;
  std::uint64_t discovery_version_ = 0;
  std::vector<HostSlots> hosts_;         // usable now, as listed
  std::vector<std::string> host_order_;  // every host ever used, first seen first
  std::vector<std::string> with_agent_;  // hosts whose agent runs
  std::map<std::string, Clock::time_point> last_failure_;
  std::map<int, Worker> workers_;
  int generation_ = 0;
  int resets_ = 0;
  bool finishing_ = false;  // a worker exited 0
  std::optional<Clock::time_point> publish_at_;
  std::optional<int> cause_;  // the failure behind the pending change
  std::string why_;           // what the pending change is
  std::optional<Clock::time_point> short_since_;
};

}  // namespace trainrun::cli::elastic
