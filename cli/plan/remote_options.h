// The command-line choices for hosts that are not this machine: how to
// reach them over SSH and which network the job uses (man/trainrun.1,
// "Multi-host"). Plain values, filled by options.cc.
#pragma once

#include <cstddef>
#include <string>

namespace trainrun::cli {

struct RemoteOptions {
  int ssh_port = 0;               // -p; 0: ~/.ssh/config, else 22
  std::string ssh_identity_file;  // -i; tried before the agent's and config's keys
  int ssh_connect_timeout_s = 10;
  bool ssh_accept_new = false;    // add unknown host keys (never changed ones)
  std::string remote_trainrun;    // empty: this binary's absolute path
  std::string network;            // --network CIDR
  std::string network_interface;  // --network-interface IF
  // --tree-radix K: the launcher reaches K hosts, each of them the next K
  // (cli/tree); 0: automatic, a tree of kAutoTreeRadix above
  // kAutoTreeHosts remote hosts. Not sent to relays (their request has it).
  int tree_radix = 0;
};

inline constexpr int kAutoTreeHosts = 128;
inline constexpr int kAutoTreeRadix = 64;
// The radix a job of `remote_hosts` uses (>= the host count: every host direct).
inline std::size_t tree_radix_for(const RemoteOptions& options, std::size_t remote_hosts) {
  if (options.tree_radix > 0) return static_cast<std::size_t>(options.tree_radix);
  return remote_hosts > static_cast<std::size_t>(kAutoTreeHosts) ? kAutoTreeRadix : remote_hosts + 1;
}

}  // namespace trainrun::cli
