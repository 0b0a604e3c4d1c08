// RemotePlan: what the launcher decides about the network and the hosts
// that are not this machine before anything starts: which hosts are
// remote, the address the rendezvous binds and why (the route to the
// hosts, --network CIDR or --network-interface IF; never 0.0.0.0), what
// every rank is told so that it binds its own host's address on the same
// network, and the probe each remote agent answers. Decided once in the
// constructor; read-only afterwards.
#pragma once

#include <string>
#include <vector>

#include "cli/agent/host_probe.h"
#include "cli/plan/job_plan.h"
#include "cli/plan/options.h"
#include "cli/plan/rank_env.h"

namespace trainrun::cli {

class RemotePlan {
 public:
  // Throws Error(InvalidArgument) for a bad --network / --network-interface
  // / -i, Error(Unsupported) for remote hosts without libssh.
  RemotePlan(const JobPlan& plan, const Options& options);

  bool any_remote() const { return !remote_hosts_.empty(); }
  bool any_local() const { return remote_hosts_.size() < remote_.size(); }
  bool is_remote(std::size_t host_index) const { return remote_[host_index]; }
  std::size_t host_count() const { return remote_.size(); }  // local and remote
  const std::vector<HostSlots>& remote_hosts() const { return remote_hosts_; }
  // A tree of agents (cli/tree): its radix (>= remote_hosts().size(): none;
  // an elastic job reaches every host itself), and whether the host's agent
  // is started by another host's rather than by trainrun.
  std::size_t tree_radix() const { return tree_radix_; }
  bool is_relayed(std::size_t host_index) const {
    return remote_[host_index] && remote_index_[host_index] >= tree_radix_;
  }
  const std::string& bind_address() const { return bind_address_; }
  // TRAINRUN_NETWORK or TRAINRUN_IFACE for every rank, when chosen.
  const EnvList& rank_env() const { return rank_env_; }
  // What each remote agent is asked before the job.
  ProbeRequest probe(const std::string& cwd) const;
  // One line per choice, for --verbose and --dry-run.
  std::vector<std::string> choices() const;

 private:
  std::vector<bool> remote_;               // per host of the plan
  std::vector<std::size_t> remote_index_;  // per host of the plan: its place in remote_hosts_
  std::size_t tree_radix_ = 1;
  std::vector<HostSlots> remote_hosts_;
  std::vector<std::string> destinations_;  // per remote host, "h1: ssh root@10.0.0.1:22"
  std::string bind_address_, bind_reason_, rank_rule_, master_rule_;
  EnvList rank_env_;
  Options options_;
  std::string forwarded_path_;  // -x PATH=..., what the ranks will search
};

}  // namespace trainrun::cli
