// SshAgentLink: a remote host agent, running at the end of an SSH exec
// channel. The supervisor sees one end of a socketpair; a pump owns the
// libssh session and moves bytes between the other end and the channel, on
// one of the few threads every host's pump shares (cli/ssh/pump_threads.h).
// The pump also watches the connection: an SSH keepalive and a
// Ping frame to the agent every kPingInterval (the agent answers Pong), and a
// connection that stays silent for kSilenceLimit (an unplugged host sends no
// FIN) is reported
// lost. The agent ends its job if the Pings stop (see cli/agent/agent.cc), so
// neither side outlives a dead link. The public methods are for the
// supervisor's thread; the session belongs to the pump thread.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "cli/agent/agent_link.h"
#include "cli/ssh/pump_threads.h"
#include "cli/ssh/ssh_session.h"
#include "os/unique_fd.h"

namespace trainrun::cli {

inline constexpr std::chrono::seconds kPingInterval{2};
// An unplugged host is named within kSilenceLimit + one poll of its last
// answer: within 10 s of the unplug, as docs/multi-host.md says (at 10 s here it
// took 11.1-11.3 s).
inline constexpr std::chrono::seconds kSilenceLimit{8};
// How long a remote agent waits for the next Ping before it ends the job.
inline constexpr std::chrono::seconds kAgentPingWindow{20};

class SshAgentLink final : public AgentLink {
 public:
  // Takes over a session whose channel runs `trainrun agent` and has said
  // Hello; throws Error(Io) if the socketpair or a pump thread cannot be made.
  SshAgentLink(std::string host, std::unique_ptr<SshSession> session);
  ~SshAgentLink() override;

  const std::string& host() const override { return host_; }
  int read_fd() const override { return local_.get(); }
  int write_fd() const override { return write_open_ ? local_.get() : -1; }
  void close_write() override;
  std::optional<std::string> failure() override;
  void finish(std::chrono::milliseconds timeout) override;

 private:
  class Pump;
  // Asks the pump to stop and waits until its thread has let it go.
  void stop_pump();

  std::string host_;
  UniqueFd local_;  // the supervisor's end
  bool write_open_ = true;
  std::shared_ptr<Pump> pump_;
  std::shared_ptr<PumpThread> thread_;  // null once the pump stopped
};

}  // namespace trainrun::cli
