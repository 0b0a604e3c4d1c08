// NodeClient: a node other than node 0 in a per-node launch (cli/node).
// It joins node 0 (trying again while node 0 is not up: a scheduler starts
// the nodes in any order), and for each run of the job node 0 asks for it
// opens an agent connection, starts this node's agent (`trainrun agent`, a
// child on pipes) and relays the frames both ways, pinning the job node 0
// sends to this node's own command, directory and environment
// (cli/node/pinned_job.h). Its job signals (SIGINT, SIGTERM, SIGHUP,
// SIGUSR1/2, SIGQUIT) go to node 0, which acts on them for the whole job;
// its exit status is the job's, as node 0's NodeEnd gives it, after one line
// with node 0's summary. When node 0 is lost, this node's ranks are
// stopped and it exits 125 after one line saying so. Single-threaded.
#pragma once

#include "cli/job/report_recorder.h"
#include "cli/node/node_settings.h"
#include "cli/node/pinned_job.h"

namespace trainrun::cli::node {

struct ClientOptions {
  NodeSettings settings;
  OwnJob own;
  int nproc = 1;     // this node's ranks (--nproc-per-node)
  std::string host;  // this machine's name
  bool verbose = false;
};

// Runs this node's part of the job; returns trainrun's exit status. The
// job's signals must be blocked (cli/main.cc does).
int run_node_client(const ClientOptions& options, ReportRecorder& report);

}  // namespace trainrun::cli::node
