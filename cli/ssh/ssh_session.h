// SshSession: one SSH connection to one host and its one exec channel,
// made with libssh the way `ssh` would: ~/.ssh/config first (HostName,
// Port, User, IdentityFile, UserKnownHostsFile, ProxyCommand/ProxyJump),
// then the command line's user@host, -p and -i over it; the host key
// checked against known_hosts; public keys only (ssh-agent, then key
// files), never a password or passphrase prompt. Failures come back in the
// words of the pre-flight table. Used by one thread at a time (moved to the
// pump thread once the agent runs); owns the libssh session.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "cli/plan/rank_plan.h"
#include "cli/plan/remote_options.h"

struct ssh_session_struct;
struct ssh_channel_struct;

namespace trainrun::cli {

// One row of the pre-flight table: which check failed and why.
struct SshFailure {
  std::string check;  // "connect", "host key", "login", "remote trainrun", ...
  std::string error;  // "connection refused", "timed out", ...
};

class SshSession {
 public:
  // Reads the configuration; no network I/O. Throws Error(InvalidArgument)
  // when libssh rejects it (e.g. a malformed ~/.ssh/config).
  SshSession(const HostSlots& host, const RemoteOptions& options);
  ~SshSession();
  SshSession(const SshSession&) = delete;
  SshSession& operator=(const SshSession&) = delete;

  // After ~/.ssh/config: the address or name connected to, and
  // "user@address:port" for --verbose and --dry-run.
  const std::string& address() const { return address_; }
  std::string destination() const;

  // Connects, checks the host key (adding an unknown one under
  // `known_hosts_lock` when accept_new), logs in. nullopt on success.
  std::optional<SshFailure> open(bool accept_new, std::mutex& known_hosts_lock);
  // Starts `command` on an exec channel.
  std::optional<SshFailure> exec(const std::string& command);

  // Blocking channel I/O for the conversation before the job (deadlines in ms).
  bool write_all(std::string_view data);
  // Bytes read (> 0), 0 on timeout, -1 at end of stream or on error.
  int read(char* buffer, std::size_t size, int timeout_ms, bool from_stderr = false);
  // The remote command's exit status once it ended, or -1.
  int exit_status();
  std::string last_error() const;
  // When libssh's error says the peer closed the connection ("Socket error:
  // disconnected"): a sentence saying so, ending with `when`; else "".
  std::string closed_by_host(const std::string& when) const;

  ssh_session_struct* session() const { return session_; }
  ssh_channel_struct* channel() const { return channel_; }

 private:
  std::optional<SshFailure> connect();
  std::optional<SshFailure> check_host_key(bool accept_new, std::mutex& known_hosts_lock);
  std::optional<SshFailure> log_in();

  ssh_session_struct* session_ = nullptr;
  ssh_channel_struct* channel_ = nullptr;
  std::string address_;
  unsigned port_ = 22;
  std::string user_;
  int timeout_s_ = 10;
};

}  // namespace trainrun::cli
