// The command-line choices of a per-node launch (cli/node): one trainrun
// per node, started by a scheduler, meeting at node 0 as torchrun's agents
// meet (man/trainrun.1, "Per-node launch"). torchrun's spellings and its
// PET_* variables fill them (cli/plan/torchrun_options.cc). Plain values.
#pragma once

#include <string>

namespace trainrun::cli {

struct NodeOptions {
  int node_rank = -1;         // --node-rank; -1: not given (assigned as the nodes join)
  std::string master_addr;    // --master-addr: node 0's name or address
  int master_port = 0;        // --master-port; 0: not given
  std::string rdzv_backend;   // --rdzv-backend: static or c10d; "": not given
  std::string rdzv_endpoint;  // --rdzv-endpoint HOST[:PORT]
  std::string rdzv_id;        // --rdzv-id: the job's name; nodes of another job are refused
  std::string rdzv_conf;      // --rdzv-conf KEY=VALUE,...: join_timeout and last_call_timeout are read
  std::string secret_file;    // --rdzv-secret-file: the secret every node shares
  bool given() const {
    return node_rank >= 0 || !master_addr.empty() || master_port > 0 || !rdzv_backend.empty() ||
           !rdzv_endpoint.empty() || !rdzv_id.empty();
  }
};

}  // namespace trainrun::cli
