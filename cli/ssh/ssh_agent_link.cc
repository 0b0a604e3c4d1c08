#include "cli/ssh/ssh_agent_link.h"

#include <fcntl.h>
#include <libssh/libssh.h>
#include <libssh/server.h>  // ssh_send_keepalive, which clients may call too
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "cli/agent/agent_protocol.h"
#include "os/net.h"
#include "trainrun/error.h"

namespace trainrun::cli {
namespace {

using Clock = std::chrono::steady_clock;

// Per direction: past this much unsent data the pump stops reading the
// source, so a slow side slows the other instead of growing memory.
constexpr std::size_t kBufferLimit = 1u << 20;
// After the agent's EOF, how long to wait for its exit status.
constexpr std::chrono::seconds kExitStatusWait{2};

}  // namespace

// One host's pump, stepped by its PumpThread. Only `stop_`, `done_` and
// `failure_` (under `mutex_`) are touched by the supervisor's thread.
class SshAgentLink::Pump final : public Pumped {
 public:
  Pump(std::string host, std::unique_ptr<SshSession> session, UniqueFd remote)
      : host_(std::move(host)), session_(std::move(session)), remote_(std::move(remote)) {
    ssh_set_blocking(session_->session(), 0);
  }

  Clock::time_point arm(std::vector<pollfd>& fds) override;
  bool step(const pollfd* fds) override;
  void stop() { stop_ = true; }
  bool done() const { return done_; }
  std::optional<std::string> failure() {
    std::lock_guard<std::mutex> lock(mutex_);
    return failure_;
  }

 private:
  bool move_bytes();
  void forward_stderr(const char* data, std::size_t size);
  void keep_alive();
  // The agent's end: what its exit status says. Always false (done).
  bool end_with_status();
  // Always false (done), for step() to return.
  bool end(std::optional<std::string> failure);

  const std::string host_;
  std::unique_ptr<SshSession> session_;
  UniqueFd remote_;
  std::atomic<bool> stop_{false}, done_{false};
  std::mutex mutex_;
  std::optional<std::string> failure_;

  std::string to_agent_, from_agent_, stderr_line_;
  FrameReader outgoing_;  // the supervisor's frames, so Pings go in between
  bool local_eof_ = false, eof_sent_ = false, agent_eof_ = false;
  bool backpressured_ = false;  // as armed: the supervisor is slow to read
  Clock::time_point last_heard_ = Clock::now(), next_ping_ = Clock::now();
  std::optional<Clock::time_point> agent_eof_at_;
};

bool SshAgentLink::Pump::end(std::optional<std::string> failure) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    failure_ = std::move(failure);
  }
  // The supervisor reads EOF only after failure() can say why.
  remote_.reset();
  done_ = true;
  return false;
}

void SshAgentLink::Pump::forward_stderr(const char* data, std::size_t size) {
  // The agent writes to its stderr only when something is badly wrong.
  stderr_line_.append(data, size);
  std::size_t newline;
  while ((newline = stderr_line_.find('\n')) != std::string::npos) {
    const std::string line = "trainrun: agent on " + host_ + ": " + stderr_line_.substr(0, newline + 1);
    (void)!::write(2, line.data(), line.size());
    stderr_line_.erase(0, newline + 1);
  }
}

// One round of copying in both directions; false once the connection broke.
bool SshAgentLink::Pump::move_bytes() {
  ssh_channel channel = session_->channel();
  char buffer[65536];
  int n = 0;
  while (from_agent_.size() < kBufferLimit &&
         (n = ssh_channel_read_nonblocking(channel, buffer, sizeof buffer, 0)) > 0) {
    from_agent_.append(buffer, static_cast<std::size_t>(n));
    // The agent answers every Ping (Pong): its bytes prove the host alive
    // even when libssh consumed the server's keepalive replies outside poll().
    last_heard_ = Clock::now();
  }
  if (n == SSH_ERROR) return false;
  if (n == SSH_EOF) agent_eof_ = true;
  while ((n = ssh_channel_read_nonblocking(channel, buffer, sizeof buffer, 1)) > 0) {
    forward_stderr(buffer, static_cast<std::size_t>(n));
  }
  if (!from_agent_.empty()) {
    const ssize_t w = ::write(remote_.get(), from_agent_.data(), from_agent_.size());
    if (w > 0) from_agent_.erase(0, static_cast<std::size_t>(w));
    else if (errno != EAGAIN && errno != EINTR) from_agent_.clear();  // the supervisor is gone
  }
  if (!local_eof_ && to_agent_.size() < kBufferLimit) {
    const ssize_t r = ::read(remote_.get(), buffer, sizeof buffer);
    if (r > 0) {
      outgoing_.feed(std::string_view(buffer, static_cast<std::size_t>(r)));
      while (auto frame = outgoing_.next()) to_agent_ += encode_frame(*frame);
    } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
      local_eof_ = true;
    }
  }
  if (!to_agent_.empty()) {
    const int w = ssh_channel_write(channel, to_agent_.data(), static_cast<std::uint32_t>(to_agent_.size()));
    if (w == SSH_ERROR) return false;
    if (w > 0) to_agent_.erase(0, static_cast<std::size_t>(w));
  }
  if (local_eof_ && to_agent_.empty() && !eof_sent_) {
    ssh_channel_send_eof(channel);  // the agent's stdin ends: it ends the job and exits
    eof_sent_ = true;
  }
  return (ssh_get_status(session_->session()) & (SSH_CLOSED | SSH_CLOSED_ERROR)) == 0;
}

void SshAgentLink::Pump::keep_alive() {
  if (Clock::now() < next_ping_) return;
  next_ping_ = Clock::now() + kPingInterval;
  if (!eof_sent_) {
    const auto window = std::chrono::duration_cast<std::chrono::milliseconds>(kAgentPingWindow).count();
    append_frame(to_agent_, FrameType::Ping, 0, 0, std::to_string(window));
  }
  // A keepalive wants a reply, so a live server always answers. The first
  // call collects the previous answer; the second sends a new request.
  ssh_send_keepalive(session_->session());
  ssh_send_keepalive(session_->session());
}

Pumped::Clock::time_point SshAgentLink::Pump::arm(std::vector<pollfd>& fds) {
  ssh_session session = session_->session();
  backpressured_ = from_agent_.size() >= kBufferLimit;
  const bool write_pending = ssh_get_poll_flags(session) & SSH_WRITE_PENDING;
  fds.push_back(
      {ssh_get_fd(session), static_cast<short>((backpressured_ ? 0 : POLLIN) | (write_pending ? POLLOUT : 0)), 0});
  fds.push_back({remote_.get(),
                 static_cast<short>((!local_eof_ && to_agent_.size() < kBufferLimit ? POLLIN : 0) |
                                    (from_agent_.empty() ? 0 : POLLOUT)),
                 0});
  return next_ping_;
}

bool SshAgentLink::Pump::step(const pollfd* fds) {
  if (fds) {
    // Another link's event woke the thread: nothing to do here yet.
    if (!fds[0].revents && !fds[1].revents && !stop_ && Clock::now() < next_ping_) return true;
    if (fds[0].revents & POLLOUT) ssh_blocking_flush(session_->session(), 0);
    // Any byte from the server proves the connection is alive; while the
    // supervisor is slow to read, silence is ours, not the host's.
    if ((fds[0].revents & POLLIN) || backpressured_) last_heard_ = Clock::now();
  }
  if (stop_) return end_with_status();
  if (!move_bytes()) {
    const std::string closed =
        session_->closed_by_host("(its sshd or this session was killed, or the host is going down)");
    return end("lost connection to " + host_ + (closed.empty() ? " (" + session_->last_error() + ")" : ": " + closed));
  }
  if (agent_eof_ && from_agent_.empty()) {
    // The agent is done; its exit status follows the EOF. (Past the EOF
    // reads no longer process packets; asking for the status does.)
    if (!agent_eof_at_) agent_eof_at_ = Clock::now();
    if (session_->exit_status() != -1 || ssh_channel_is_closed(session_->channel()) ||
        Clock::now() - *agent_eof_at_ > kExitStatusWait) {
      return end_with_status();
    }
  }
  keep_alive();
  if (Clock::now() - last_heard_ > kSilenceLimit) {
    return end("lost connection to " + host_ + " (no answer for " + std::to_string(kSilenceLimit.count()) + " s)");
  }
  return true;
}

bool SshAgentLink::Pump::end_with_status() {
  const int status = session_->exit_status();
  if (stop_ || status == 0) return end(std::nullopt);
  if (status > 0) return end("the agent on " + host_ + " exited with code " + std::to_string(status));
  return end("the agent on " + host_ + " ended without an exit status (killed by a signal?)");
}

SshAgentLink::SshAgentLink(std::string host, std::unique_ptr<SshSession> session) : host_(std::move(host)) {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, pair) != 0) {
    throw Error(Error::Code::Io, "cannot create a socketpair for the agent on " + host_ + ": " + std::strerror(errno));
  }
  local_.reset(pair[0]);
  pump_ = std::make_shared<Pump>(host_, std::move(session), UniqueFd(pair[1]));
  thread_ = pump_thread_for_new_link();
  thread_->add(pump_);
}

SshAgentLink::~SshAgentLink() { stop_pump(); }

void SshAgentLink::stop_pump() {
  if (!thread_) return;
  pump_->stop();
  thread_->wake();
  while (!pump_->done()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  thread_.reset();  // the last link on its thread ends the thread
}

void SshAgentLink::close_write() {
  if (write_open_) ::shutdown(local_.get(), SHUT_WR);
  write_open_ = false;
}

std::optional<std::string> SshAgentLink::failure() { return pump_->failure(); }

void SshAgentLink::finish(std::chrono::milliseconds timeout) {
  close_write();
  const auto deadline = Clock::now() + timeout;
  while (!pump_->done() && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  stop_pump();
}

}  // namespace trainrun::cli
