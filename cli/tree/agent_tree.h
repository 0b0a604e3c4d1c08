// The start of a tree of agents (docs/multi-host.md, "Large jobs"): this
// process checks and starts the agents of the first `radix` hosts itself,
// as the pre-flight does, and asks each of them (a Relay frame) to do the
// same for its block of the rest (cli/tree/tree_shape.h), which they do in
// parallel. The launcher calls it for a job's remote hosts; a relay agent
// calls it, on a thread of its own, for its block. Every host's checks and
// probe answer come back in order; the links to hosts further down are
// RelayedAgentLinks through the link of the host that relays for them. So
// the caller holds one SSH session, one pump socketpair and one wake pipe
// per direct host, whatever the job's size.
#pragma once

#include <cstddef>
#include <vector>

#include "cli/agent/host_probe.h"
#include "cli/plan/rank_plan.h"
#include "cli/plan/remote_options.h"
#include "cli/ssh/preflight.h"

namespace trainrun::cli {

// As start_remote_agents, through a tree of `radix` (>= 1; radix >= the
// host count: every host direct). A relay that does not answer within
// the tree's depth below it times (2 x --ssh-connect-timeout + 5 s) fails
// its hosts, named.
RemoteAgents start_agent_tree(const std::vector<HostSlots>& hosts, const RemoteOptions& options,
                              const ProbeRequest& request, std::size_t radix, bool verbose, bool watch_signals);

}  // namespace trainrun::cli
