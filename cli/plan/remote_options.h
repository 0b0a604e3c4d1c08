// The command-line choices for hosts that are not this machine: how to
// reach them over SSH and which network the job uses (man/trainrun.1,
// "Multi-host"). Plain values, filled by options.cc.
#pragma once

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
};

}  // namespace trainrun::cli
