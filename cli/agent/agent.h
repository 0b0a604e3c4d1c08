// The host agent, `trainrun agent` (a hidden mode of the same binary): it
// reads a job description (argv, per-rank environment including the secret)
// from the launcher on in_fd, starts each rank in its own session, is the
// child subreaper of everything they start, sends their output, start and
// exit back as frames on out_fd, forwards signals, and when in_fd hits EOF
// (launcher done, killed, or the SSH channel gone) ends the whole job on
// this host: SIGTERM, the grace period, SIGKILL. One per host per job;
// single-threaded (but for what `extension` runs). See
// cli/agent/agent_protocol.h for the frames.
#pragma once

namespace trainrun::cli {

class AgentExtension;

// `extension`, when given, takes the frames the agent does not know (the
// relay of a tree of agents) and keeps the agent until it is done.
int run_agent(int in_fd, int out_fd, AgentExtension* extension = nullptr);

}  // namespace trainrun::cli
