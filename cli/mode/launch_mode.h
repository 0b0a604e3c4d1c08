// LaunchMode: how a job's ranks are started. Most modes start trainrun's
// own agent on every host, each its own way (cli/mode/agent_mode.h), and
// cli/launch.cc plans, supervises and reports the job alike for all of
// them; a mode whose ranks another program starts and watches (Open MPI's
// mpirun) runs the job itself. cli/choose_launch_mode.h is the one place
// that knows every mode; cli/launch.cc asks the mode it chose, never which
// one it has. Used from the launcher's main thread.
#pragma once

#include <memory>
#include <string>

#include "cli/plan/options.h"

namespace trainrun::cli {

class AgentMode;
class ReportRecorder;

// cli/launch.cc's side of a job that trainrun's agents run: plans it (anew
// for every --max-restarts attempt), starts the rendezvous and the agents
// `mode` gives, supervises them to the end and reports. Returns trainrun's
// exit status.
class AgentLauncher {
 public:
  virtual ~AgentLauncher() = default;
  virtual int launch(const Options& options, ReportRecorder& report, const AgentMode& mode) = 0;
};

class LaunchMode {
 public:
  virtual ~LaunchMode() = default;
  // Runs the job to its end and returns trainrun's exit status
  // (man/trainrun.1); `report` records it (--report). A mode whose agents
  // trainrun supervises hands the job to `launcher`.
  virtual int run(const Options& options, ReportRecorder& report, AgentLauncher& launcher) const = 0;
};

// What a mode's chooser says about a command line (cli/choose_launch_mode.h).
struct LaunchModeChoice {
  std::unique_ptr<LaunchMode> mode;  // null: this mode does not run the job
  std::string error;                 // a usage error (exit 2): nothing starts
};

}  // namespace trainrun::cli
