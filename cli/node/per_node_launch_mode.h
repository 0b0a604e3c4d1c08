// PerNodeLaunchMode: one trainrun per node, as torchrun runs, for
// schedulers that start a launcher on every node themselves (Kubeflow's
// PyTorchJob, `srun --ntasks-per-node=1 trainrun ...`, SageMaker, ...).
// run() finds out which node this is. Node 0 (--node-rank 0; without one,
// the node whose address the endpoint names and that can listen there)
// serves the job: it waits for the nodes to join (NodeServer), then runs
// the job on them as trainrun's launcher runs any (Node0Mode, through
// cli/launch.cc: one rank order, one summary, one report, --max-restarts
// for every node together), and finally tells each node how it ended.
// Every other node joins it and runs its own ranks (NodeClient). Chosen by
// choose_per_node (cli/node/node_settings.h says when). Used from the
// launcher's main thread.
#pragma once

#include "cli/mode/launch_mode.h"
#include "cli/node/node_settings.h"

namespace trainrun::cli::node {

class PerNodeLaunchMode final : public LaunchMode {
 public:
  explicit PerNodeLaunchMode(NodeSettings settings) : settings_(std::move(settings)) {}
  int run(const Options& options, ReportRecorder& report, AgentLauncher& launcher) const override;

 private:
  NodeSettings settings_;
};

// The per-node mode when the command line or the environment asks for it;
// else no mode, or the usage error.
LaunchModeChoice choose_per_node(const Options& options, const GetEnv& getenv);

}  // namespace trainrun::cli::node
