// The pre-flight of hosts that are not this machine: before any rank
// starts, every remote host is checked at once, one thread per host:
// connect, host key, login, start `trainrun agent` there, check its
// version, and ask it the ProbeRequest (program, directory, network
// address). Only when every host passed are the agents handed to the
// supervisor. Built from preflight.cc with libssh, else from
// preflight_disabled.cc, which refuses remote hosts with one clear message.
// Call from the launcher's main thread, with the job signals blocked.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cli/agent/agent_link.h"
#include "cli/ssh/check_table.h"
#include "cli/agent/host_probe.h"
#include "cli/plan/rank_plan.h"
#include "cli/plan/remote_options.h"

namespace trainrun::cli {

// Where SSH connects for `host` after ~/.ssh/config, without connecting.
struct SshDestination {
  std::string address;  // HostName, for the route to the host
  std::string text;     // "user@address:port"
};
// Throws Error(Unsupported) when trainrun was built without libssh.
SshDestination ssh_destination(const HostSlots& host, const RemoteOptions& options);
// The name SSH would look up for `host`: its HostName in ~/.ssh/config, or
// the name itself (always, without libssh). Whether a host is this machine
// is asked of this name, so an alias costs no DNS query of its own.
std::string ssh_host_name(const HostSlots& host, const RemoteOptions& options);

struct RemoteAgents {
  bool ok = false;                                // every check of every host passed
  int signal = 0;                                 // a stop signal cut the checks short
  std::vector<CheckRow> rows;                     // every check made, host by host
  std::vector<std::unique_ptr<AgentLink>> links;  // when ok: one per host, in order
  std::vector<ProbeAnswer> answers;               // when ok: one per host, in order
};

// Checks `hosts` in parallel (bounded by --ssh-connect-timeout each) and
// starts their agents. `verbose` prints each host's result as it is known.
// `watch_signals`: a stop signal cuts the checks short (the launcher's main
// thread); false on another thread, which must not take the signals of the
// process it runs in (a relay agent, cli/tree).
RemoteAgents start_remote_agents(const std::vector<HostSlots>& hosts, const RemoteOptions& options,
                                 const ProbeRequest& request, bool verbose, bool watch_signals = true);

}  // namespace trainrun::cli
