#include "cli/ssh/ssh_session.h"

#include <libssh/libssh.h>
#include <unistd.h>

#include <cerrno>

#include "os/net.h"
#include "trainrun/error.h"

namespace trainrun::cli {
namespace {

std::string option_text(ssh_session session, ssh_options_e option) {
  char* value = nullptr;
  if (ssh_options_get(session, option, &value) != SSH_OK || !value) return "";
  std::string text = value;
  ssh_string_free_char(value);
  return text;
}

std::string connect_error(int error, const std::string& resolve_error, const std::string& address) {
  if (!resolve_error.empty()) {
    return "cannot resolve the host name " + address + " (" + resolve_error + "): a typo in -H/--hostfile, or DNS";
  }
  switch (error) {
    case ECONNREFUSED: return "connection refused";
    case ETIMEDOUT: return "timed out";
    case EHOSTUNREACH: return "no route to host";
    case ENETUNREACH: return "network unreachable";
    default: return net::errno_text(error);
  }
}

// "ssh-ed25519 SHA256:abc..." for the messages about host keys.
std::string key_fingerprint(ssh_session session) {
  ssh_key key = nullptr;
  if (ssh_get_server_publickey(session, &key) != SSH_OK) return "(no host key)";
  unsigned char* hash = nullptr;
  std::size_t length = 0;
  std::string text = ssh_key_type_to_char(ssh_key_type(key));
  if (ssh_get_publickey_hash(key, SSH_PUBLICKEY_HASH_SHA256, &hash, &length) == 0) {
    char* fingerprint = ssh_get_fingerprint_hash(SSH_PUBLICKEY_HASH_SHA256, hash, length);
    text += std::string(" ") + (fingerprint ? fingerprint : "?");
    ssh_string_free_char(fingerprint);
    ssh_clean_pubkey_hash(&hash);
  }
  ssh_key_free(key);
  return text;
}

}  // namespace

SshSession::SshSession(const HostSlots& host, const RemoteOptions& options)
    : timeout_s_(options.ssh_connect_timeout_s) {
  session_ = ssh_new();
  if (!session_) throw Error(Error::Code::Internal, "libssh: cannot create a session");
  ssh_options_set(session_, SSH_OPTIONS_HOST, host.host.c_str());
  // ~/.ssh/config (and /etc/ssh/ssh_config) first; what the command line
  // says goes over it, as with ssh.
  if (ssh_options_parse_config(session_, nullptr) != SSH_OK) {
    const std::string why = last_error();
    ssh_free(session_);
    throw Error(Error::Code::InvalidArgument, "~/.ssh/config: " + why);
  }
  if (!host.user.empty()) ssh_options_set(session_, SSH_OPTIONS_USER, host.user.c_str());
  if (options.ssh_port > 0) ssh_options_set(session_, SSH_OPTIONS_PORT, &options.ssh_port);
  if (!options.ssh_identity_file.empty()) {
    ssh_options_set(session_, SSH_OPTIONS_IDENTITY, options.ssh_identity_file.c_str());
  }
  // Our messages say what failed; libssh's own log (LogLevel in the
  // config turns it on) would only clutter the job's stderr.
  const int quiet = SSH_LOG_NOLOG;
  ssh_options_set(session_, SSH_OPTIONS_LOG_VERBOSITY, &quiet);
  const long timeout = options.ssh_connect_timeout_s;
  ssh_options_set(session_, SSH_OPTIONS_TIMEOUT, &timeout);
  address_ = option_text(session_, SSH_OPTIONS_HOST);
  user_ = option_text(session_, SSH_OPTIONS_USER);
  ssh_options_get_port(session_, &port_);
}

SshSession::~SshSession() {
  if (channel_) ssh_channel_free(channel_);
  if (session_) {
    if (ssh_is_connected(session_)) ssh_disconnect(session_);
    ssh_free(session_);
  }
}

std::string SshSession::destination() const {
  return (user_.empty() ? "" : user_ + "@") + address_ + ":" + std::to_string(port_);
}

std::string SshSession::last_error() const { return ssh_get_error(session_); }

std::string SshSession::closed_by_host(const std::string& when) const {
  const std::string raw = last_error();
  if (raw.find("disconnected") == std::string::npos) return "";
  return "the host closed the SSH connection " + when;
}

std::optional<SshFailure> SshSession::connect() {
  // Our own TCP connect says exactly why it failed (refused, timed out,
  // cannot resolve); libssh connects itself only through a ProxyCommand.
  if (option_text(session_, SSH_OPTIONS_PROXYCOMMAND).empty()) {
    int error = 0;
    std::string resolve_error;
    UniqueFd socket =
        net::connect_tcp(address_, std::to_string(port_),
                         std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s_), &error, &resolve_error);
    if (!socket) return SshFailure{"connect", connect_error(error, resolve_error, address_)};
    const int fd = socket.release();  // the session owns it from here: ssh_free() closes it
    ssh_options_set(session_, SSH_OPTIONS_FD, &fd);
  }
  if (ssh_connect(session_) != SSH_OK) {
    const std::string why = last_error();
    if (why.find("Timeout") != std::string::npos || why.find("timeout") != std::string::npos) {
      return SshFailure{"connect", "timed out (" + why + ")"};
    }
    const std::string closed = closed_by_host(
        "during the handshake (not an SSH server on that port, or its sshd dropped the connection: "
        "MaxStartups, a firewall, tcp wrappers)");
    if (!closed.empty()) return SshFailure{"connect", closed};
    return SshFailure{"connect", why};
  }
  return std::nullopt;
}

std::optional<SshFailure> SshSession::check_host_key(bool accept_new, std::mutex& known_hosts_lock) {
  const std::string where = port_ == 22 ? address_ : "[" + address_ + "]:" + std::to_string(port_);
  switch (ssh_session_is_known_server(session_)) {
    case SSH_KNOWN_HOSTS_OK: return std::nullopt;
    case SSH_KNOWN_HOSTS_CHANGED:
    case SSH_KNOWN_HOSTS_OTHER:
      return SshFailure{"host key", "host key mismatch: " + where + " presents " + key_fingerprint(session_) +
                                        ", not the key known_hosts has for it (if the host was reinstalled: "
                                        "ssh-keygen -R '" +
                                        where + "')"};
    case SSH_KNOWN_HOSTS_UNKNOWN:
    case SSH_KNOWN_HOSTS_NOT_FOUND:
      if (accept_new) {
        std::lock_guard<std::mutex> lock(known_hosts_lock);
        if (ssh_session_update_known_hosts(session_) == SSH_OK) return std::nullopt;
        return SshFailure{"host key", "cannot add the host key to known_hosts: " + last_error()};
      }
      return SshFailure{"host key", "unknown host key " + key_fingerprint(session_) +
                                        " (check it, then: ssh-keyscan -p " + std::to_string(port_) + " " + address_ +
                                        " >> ~/.ssh/known_hosts; or --ssh-accept-new)"};
    default: return SshFailure{"host key", "cannot check the host key: " + last_error()};
  }
}

std::optional<SshFailure> SshSession::log_in() {
  const std::string as = " as " + (user_.empty() ? std::string("the local user") : user_);
  int rc = ssh_userauth_none(session_, nullptr);
  if (rc == SSH_AUTH_SUCCESS) return std::nullopt;
  if (rc == SSH_AUTH_ERROR) return SshFailure{"login", last_error()};
  if (!(ssh_userauth_list(session_, nullptr) & SSH_AUTH_METHOD_PUBLICKEY)) {
    return SshFailure{"login", "authentication failed (publickey)" + as + ": the server does not accept public keys"};
  }
  // ssh-agent, then -i, IdentityFile and ~/.ssh/id_*; an encrypted key
  // without an agent is skipped (no prompt: there is no callback).
  rc = ssh_userauth_publickey_auto(session_, nullptr, nullptr);
  if (rc == SSH_AUTH_SUCCESS) return std::nullopt;
  if (rc == SSH_AUTH_ERROR) return SshFailure{"login", last_error()};
  return SshFailure{"login", "authentication failed (publickey)" + as};
}

std::optional<SshFailure> SshSession::open(bool accept_new, std::mutex& known_hosts_lock) {
  if (auto failure = connect()) return failure;
  if (auto failure = check_host_key(accept_new, known_hosts_lock)) return failure;
  return log_in();
}

std::optional<SshFailure> SshSession::exec(const std::string& command) {
  channel_ = ssh_channel_new(session_);
  if (!channel_ || ssh_channel_open_session(channel_) != SSH_OK ||
      ssh_channel_request_exec(channel_, command.c_str()) != SSH_OK) {
    return SshFailure{"remote trainrun", "cannot start '" + command + "': " + last_error()};
  }
  return std::nullopt;
}

bool SshSession::write_all(std::string_view data) {
  while (!data.empty()) {
    const int n = ssh_channel_write(channel_, data.data(), static_cast<std::uint32_t>(data.size()));
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

int SshSession::read(char* buffer, std::size_t size, int timeout_ms, bool from_stderr) {
  const int n =
      ssh_channel_read_timeout(channel_, buffer, static_cast<std::uint32_t>(size), from_stderr ? 1 : 0, timeout_ms);
  if (n > 0) return n;
  // (ssh_channel_is_eof stays false while the other stream has data.)
  if (n == 0 && ssh_channel_poll(channel_, from_stderr ? 1 : 0) != SSH_EOF) return 0;
  return -1;
}

int SshSession::exit_status() { return ssh_channel_get_exit_status(channel_); }

}  // namespace trainrun::cli
