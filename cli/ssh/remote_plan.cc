#include "cli/ssh/remote_plan.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "cli/plan/host_list.h"
#include "cli/process/self_executable.h"
#include "cli/plan/local_host.h"
#include "cli/ssh/preflight.h"
#include "cli/plan/shell_words.h"
#include "os/interfaces.h"
#include "os/net.h"
#include "contract/environment.h"
#include "trainrun/error.h"

namespace trainrun::cli {

RemotePlan::RemotePlan(const JobPlan& plan, const Options& options) : options_(options) {
  const RemoteOptions& r = options.remote;
  // A per-node launch's hosts are where they joined from (no SSH, no
  // lookup); the others are where SSH would go (an alias's HostName).
  std::vector<std::string> names;
  for (const HostSlots& host : plan.hosts) {
    names.push_back(host.joined_from.empty() ? ssh_host_name(host, r) : host.joined_from);
  }
  const std::vector<bool> local = are_local_hosts(names);
  for (std::size_t i = 0; i < plan.hosts.size(); ++i) {
    const HostSlots& host = plan.hosts[i];
    remote_.push_back(!local[i]);
    remote_index_.push_back(remote_hosts_.size());
    if (!remote_.back()) continue;
    remote_hosts_.push_back(host);
    std::string address = host.joined_from;
    if (address.empty()) {
      const SshDestination destination = ssh_destination(host, r);
      destinations_.push_back(display_name(host) + ": ssh " + destination.text);
      address = destination.address;
    }
    if (bind_address_.empty() && r.network.empty() && r.network_interface.empty()) {
      try {
        bind_address_ = net::local_address_toward(address);
        bind_reason_ = "the address that routes to " + display_name(host) + " (" + address + ")";
      } catch (const Error&) {
        // Unresolvable or unroutable: the pre-flight names it; try the next.
      }
    }
  }
  tree_radix_ = options.elastic() ? remote_hosts_.size() + 1 : tree_radix_for(r, remote_hosts_.size());
  if (!r.ssh_identity_file.empty() && ::access(r.ssh_identity_file.c_str(), R_OK) != 0) {
    throw Error(Error::Code::InvalidArgument, "-i " + r.ssh_identity_file + ": " + std::strerror(errno));
  }
  for (const auto& [name, value] : plan.forwarded) {
    if (name == "PATH") forwarded_path_ = value;
  }
  // The option's value names where this machine binds; errors name the option.
  const auto bind = [&](const std::string& option, const std::string& value, std::string (*find)(const std::string&)) {
    try {
      bind_address_ = find(value);
    } catch (const Error& e) {
      throw Error(Error::Code::InvalidArgument, option + " " + value + ": " + e.what());
    }
  };
  if (!r.network.empty()) {
    bind("--network", r.network, net::address_in_network);
    bind_reason_ = "this machine's address in --network " + r.network;
    rank_env_.emplace_back(contract::kEnvNetwork, r.network);
    rank_rule_ = "its host's address in " + r.network + " (" + contract::kEnvNetwork + ")";
  } else if (!r.network_interface.empty()) {
    bind("--network-interface", r.network_interface, net::interface_address);
    bind_reason_ = "the address of --network-interface " + r.network_interface;
    rank_env_.emplace_back(contract::kEnvIface, r.network_interface);
    rank_rule_ = "interface " + r.network_interface + " on its host (" + contract::kEnvIface + ")";
  } else {
    rank_rule_ = "its host's address that routes to the rendezvous";
  }
  if (bind_address_.empty()) {
    bind_address_ = "127.0.0.1";
    bind_reason_ = any_remote() ? "no remote host resolves" : "every host is this machine";
  }
  master_rule_ = remote_[0] ? "rank 0's host " + display_name(plan.hosts[0]) + ", its address on the job's network"
                            : bind_address_ + " (rank 0 runs on this machine)";
}

ProbeRequest RemotePlan::probe(const std::string& cwd) const {
  ProbeRequest request;
  request.program = options_.command.empty() ? "" : options_.command.front();
  request.path = forwarded_path_;
  request.cwd = cwd;
  request.rendezvous_addr = bind_address_;
  request.network = options_.remote.network;
  request.interface = options_.remote.network_interface;
  return request;
}

std::vector<std::string> RemotePlan::choices() const {
  std::vector<std::string> lines = {
      "rendezvous binds " + bind_address_ + ": " + bind_reason_,
      "each rank binds " + rank_rule_,
      "MASTER_ADDR is " + master_rule_,
  };
  if (any_remote()) {
    const std::string path =
        options_.remote.remote_trainrun.empty() ? self_executable() : options_.remote.remote_trainrun;
    for (const std::string& destination : destinations_) {
      lines.push_back(destination + ", runs " + display_quote(path) + " agent");
    }
  }
  if (tree_radix_ < remote_hosts_.size()) {
    lines.push_back("agents start as a tree of radix " + std::to_string(tree_radix_) + ": trainrun reaches the first " +
                    std::to_string(tree_radix_) + " remote hosts, they start the other " +
                    std::to_string(remote_hosts_.size() - tree_radix_) + " (--tree-radix)");
  }
  return lines;
}

}  // namespace trainrun::cli
