// AgentMode: a launch mode that starts trainrun's own agent on every host
// (`trainrun agent`, cli/agent/agent.h) and lets cli/launch.cc plan,
// supervise and report the job: modes differ only in how an agent is
// started and reached (cli/agent/agent_link.h) and in what they say about
// it. cli/launch.cc asks, for every run of the job (each --max-restarts
// attempt is planned anew): how the report names the mode and its hosts,
// the lines --verbose and --dry-run show, then start(), whose JobAgents
// give one link per host. Used from the launcher's main thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/agent/agent_link.h"
#include "cli/job/supervisor.h"
#include "cli/mode/host_source.h"
#include "cli/mode/launch_mode.h"
#include "cli/mode/planned_job.h"
#include "cli/plan/rank_plan.h"
#include "rendezvous/auth.h"

namespace trainrun::cli {

// How the launcher reaches a host's agent: what that costs trainrun in open
// files (checked before the start) and whether the report calls it remote.
enum class AgentReach {
  kChild,    // forked here on pipes: it inherits trainrun's open-files limit
  kSsh,      // an SSH session, its pump's socketpair and wake pipe: a remote host
  kRelayed,  // started by another remote host's agent (cli/tree): a remote host that costs trainrun no files
  kOther,    // started by another program on its host (an srun step)
};

// Where rank 0's host can listen for torch's env:// store (MASTER_ADDR and
// MASTER_PORT), as that host's agent found it.
struct MasterEndpoint {
  std::string address;
  std::uint16_t port = 0;
};

// One run's agents, once AgentMode::start() let the job go on.
class JobAgents {
 public:
  virtual ~JobAgents() = default;
  // Rank 0's host endpoint when start() asked that host (SSH's pre-flight);
  // nullopt: the launcher names the host and picks the port itself.
  virtual std::optional<MasterEndpoint> master() const = 0;
  // One link per host of the plan, in its order: started now or taken over
  // from start(). Called once, as the supervisor begins.
  virtual std::vector<std::unique_ptr<AgentLink>> links() = 0;
  // The agent of a host that joins the job later (elastic), started now;
  // nullptr with `*error` saying why when it could not be.
  virtual std::unique_ptr<AgentLink> link_later(const HostSlots& host, std::string* error) = 0;
  // Descriptors of the mode's own that the supervisor watches beside the
  // agents (a per-node launch's nodes), or none.
  virtual EventSource* events() { return nullptr; }
};

// What AgentMode::start() gives: the agents, or the end of the job.
struct AgentStart {
  std::unique_ptr<JobAgents> agents;  // null: the job ends here
  int exit_status = 0;                // then: trainrun's exit status
};

class AgentMode : public LaunchMode {
 public:
  // Hands the job to `launcher`, which asks this mode the rest.
  int run(const Options& options, ReportRecorder& report, AgentLauncher& launcher) const override {
    return launcher.launch(options, report, *this);
  }
  // How the report names the launcher: "local", "ssh", "srun".
  virtual std::string name(const PlannedJob& planned) const = 0;
  // How the agent of `planned.plan.hosts[host]` is reached.
  virtual AgentReach reach(const PlannedJob& planned, std::size_t host) const = 0;
  // What starts each host's agent, one line per choice, without the
  // "trainrun: " that --verbose and --dry-run put before each.
  virtual std::vector<std::string> agent_choices(const PlannedJob& planned) const = 0;
  // The line --dry-run shows before those (srun: the allocation); nullopt: none.
  virtual std::optional<std::string> dry_run_line() const = 0;
  // The whole line stderr shows as each run starts (srun chosen inside an
  // allocation without --launcher); nullopt: none.
  virtual std::optional<std::string> announcement() const = 0;
  // Once the rendezvous runs, before the ranks' environment is made: checks
  // the hosts and starts what must come first (SSH: every remote host's
  // pre-flight, in parallel). When the job ends here it has said why and
  // told `report`.
  virtual AgentStart start(const Options& options, const PlannedJob& planned, ReportRecorder& report) const = 0;
  // The ranks' secret for the run whose job id is `job_id` (the
  // rendezvous' and every handshake's): fresh, unless the hosts work it out
  // themselves from one they share (a per-node launch, cli/node).
  virtual rendezvous::Secret job_secret(const std::string& job_id) const;
  // An elastic job's hosts when the mode knows them itself (a per-node
  // launch's nodes, which join and leave); nullptr: -H, --hostfile or the
  // discovery script.
  virtual HostSource* host_source() const { return nullptr; }
};

}  // namespace trainrun::cli
