#include "cli/node/node_client.h"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <memory>

#include "cli/agent/local_agent_link.h"
#include "cli/job/job_state.h"
#include "cli/node/node_dial.h"
#include "cli/node/node_io.h"
#include "cli/process/wait_status.h"
#include "trainrun/error.h"
#include "trainrun/version.h"

namespace trainrun::cli::node {
namespace {

using Clock = std::chrono::steady_clock;

// Per direction: past this much unsent data the relay stops reading the
// source, so a slow side slows the other instead of growing memory.
constexpr std::size_t kBufferLimit = 1u << 20;
constexpr std::chrono::seconds kAgentConnect{30};
constexpr std::chrono::seconds kFirstWaitNote{10}, kWaitNoteEvery{60};
constexpr std::chrono::seconds kNode0Eof{10};  // after this node's agent is done

sigset_t job_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGQUIT}) sigaddset(&set, sig);
  return set;
}

class Client {
 public:
  Client(const ClientOptions& options, ReportRecorder& report) : o_(options), report_(report) {}
  int run();

 private:
  bool join();
  std::vector<pollfd> poll_set() const;
  void dispatch(const pollfd& p);
  void on_signal();
  void on_control();
  void start_run(int run);
  void on_from_node0();
  void on_from_agent();
  void flush(int fd, std::string& buffer);
  void check_run();
  void lost_node0(const std::string& why);
  bool busy() const { return agent_ || link_; }
  void finish(int status, const std::string& outcome, const std::string& summary);

  const ClientOptions& o_;
  ReportRecorder& report_;
  UniqueFd signal_fd_;
  UniqueFd control_;
  FrameReader control_reader_;
  Welcome welcome_;
  std::optional<int> pending_run_;
  // The run in progress: the agent connection and this node's agent.
  UniqueFd link_;
  FrameReader from_node0_;
  std::string to_node0_, to_agent_;
  std::unique_ptr<LocalAgentLink> agent_;
  bool node0_eof_ = false, agent_eof_ = false, sent_eof_ = false;
  Clock::time_point agent_done_at_;
  std::optional<JobEnd> end_;
  std::optional<int> lost_;  // node 0 is gone: this node ends with this status
  std::optional<int> exit_;
};

bool Client::join() {
  Join join;
  join.kind = ConnectionKind::Control;
  join.job = o_.settings.job_id;
  join.node_rank = o_.settings.node_rank;
  join.nproc = o_.nproc;
  join.host = o_.host;
  join.version = kVersion;
  const auto started = Clock::now();
  auto next_note = started + kFirstWaitNote;
  int signal = 0;
  const auto waiting = [&](const std::string& why) {
    if (Clock::now() < next_note) return;
    std::cerr << "trainrun: waiting for node 0 at " << o_.settings.endpoint() << ": " << why << "\n";
    next_note = Clock::now() + kWaitNoteEvery;
  };
  const auto stop = [&] {
    signalfd_siginfo info{};
    while (::read(signal_fd_.get(), &info, sizeof info) == sizeof info) {
      const int sig = static_cast<int>(info.ssi_signo);
      if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) signal = sig;
    }
    return signal != 0;
  };
  Dialed dialed = dial_node0(o_.settings, join, o_.own.secret, started + o_.settings.join_timeout, waiting, stop);
  if (signal) {
    const std::string line = "trainrun: received " + signal_name(signal) + " while joining node 0 at " +
                             o_.settings.endpoint() + ": nothing was started here";
    std::cerr << line << "\n";
    finish(128 + signal, "signal", line);
    return false;
  }
  if (!dialed.fd) {
    const bool timed_out = !dialed.refused;
    const std::string line =
        "trainrun: error: " + dialed.error +
        (timed_out ? " (for " + std::to_string(o_.settings.join_timeout.count()) + " s, --rdzv-conf join_timeout=S)"
                   : "");
    std::cerr << line << "\n";
    finish(kExitLaunch, "launch_failed", line);
    return false;
  }
  control_ = std::move(dialed.fd);
  control_reader_ = std::move(dialed.reader);
  welcome_ = dialed.welcome;
  if (o_.verbose) {
    std::cerr << "trainrun: node " << welcome_.node_rank << " of " << welcome_.nodes << ": joined node 0 at "
              << o_.settings.endpoint() << " with " << o_.nproc << " rank(s)\n";
  }
  return true;
}

void Client::finish(int status, const std::string& outcome, const std::string& summary) {
  report_.set_launcher("per-node");
  report_.failed(outcome, summary);
  exit_ = status;
}

void Client::start_run(int run) {
  Join join;
  join.kind = ConnectionKind::Agent;
  join.job = o_.settings.job_id;
  join.node_rank = welcome_.node_rank;
  join.nproc = o_.nproc;
  join.host = o_.host;
  join.version = kVersion;
  join.attempt = run;
  join.token = welcome_.token;
  Dialed dialed = dial_node0(
      o_.settings, join, o_.own.secret, Clock::now() + kAgentConnect, [](const std::string&) {}, [] { return false; });
  if (!dialed.fd) {
    std::cerr << "trainrun: error: node " << welcome_.node_rank << ": cannot start its agent for run " << run << ": "
              << dialed.error << "\n";
    return;  // node 0 names this node when its agent does not come
  }
  try {
    agent_ = std::make_unique<LocalAgentLink>(o_.host);
  } catch (const Error& e) {
    std::cerr << "trainrun: error: " << e.what() << "\n";
    return;  // the connection closes: node 0 names this node as lost
  }
  link_ = std::move(dialed.fd);
  from_node0_ = std::move(dialed.reader);
  to_node0_.clear();
  to_agent_.clear();
  node0_eof_ = agent_eof_ = sent_eof_ = false;
  on_from_node0();  // frames that came with the welcome
}

// Frames from node 0 for this node's agent: job descriptions pinned to this
// node's own command, directory and environment; the rest as they are.
void Client::on_from_node0() {
  char buffer[65536];
  while (link_ && !node0_eof_) {
    const ssize_t n = ::read(link_.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    if (n <= 0) {
      node0_eof_ = true;
      break;
    }
    from_node0_.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
    if (to_agent_.size() > kBufferLimit) break;
  }
  try {
    while (std::optional<Frame> frame = from_node0_.next()) {
      if (frame->type == FrameType::Job || frame->type == FrameType::AddRanks) {
        std::optional<JobSpec> job = decode_job(frame->payload);
        if (job) frame->payload = encode_job(pin_job(std::move(*job), o_.own));
      }
      append_frame(to_agent_, frame->type, frame->rank, frame->stream, frame->payload);
    }
  } catch (const std::exception& e) {
    std::cerr << "trainrun: error: garbled data from node 0: " << e.what() << "\n";
    node0_eof_ = true;
  }
}

void Client::on_from_agent() {
  char buffer[65536];
  const ssize_t n = ::read(agent_->read_fd(), buffer, sizeof buffer);
  if (n > 0) {
    if (link_) to_node0_.append(buffer, static_cast<std::size_t>(n));  // else node 0 is gone: dropped
  } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
    agent_eof_ = true;
    agent_done_at_ = Clock::now();
  }
}

void Client::flush(int fd, std::string& buffer) {
  const ssize_t n = ::write(fd, buffer.data(), buffer.size());
  if (n > 0) buffer.erase(0, static_cast<std::size_t>(n));
  else if (n < 0 && errno != EAGAIN && errno != EINTR) buffer.clear();  // the other side is gone
}

// The run's end, in order: node 0's EOF reaches the agent, the agent's last
// frames and EOF reach node 0, node 0 closes.
void Client::check_run() {
  if (!busy()) {
    if (pending_run_) start_run(*std::exchange(pending_run_, std::nullopt));
    return;
  }
  if (agent_ && node0_eof_ && to_agent_.empty()) agent_->close_write();  // the agent ends what it started
  if (agent_ && agent_eof_) {
    agent_->finish(std::chrono::seconds(2));
    agent_.reset();
  }
  if (!link_) return;
  if (!agent_ && to_node0_.empty() && !sent_eof_) {
    ::shutdown(link_.get(), SHUT_WR);
    sent_eof_ = true;
  }
  if (sent_eof_ && (node0_eof_ || Clock::now() - agent_done_at_ > kNode0Eof)) link_.reset();
}

void Client::lost_node0(const std::string& why) {
  if (lost_) return;
  std::cerr << "trainrun: error: lost node 0 at " << o_.settings.endpoint() << ": " << why
            << (busy() ? "; stopping this node's ranks" : "") << "\n";
  report_.failed("launch_failed", "trainrun: error: lost node 0 at " + o_.settings.endpoint() + ": " + why);
  lost_ = kExitLaunch;
  control_.reset();
  if (agent_) agent_->close_write();
  link_.reset();
  node0_eof_ = true;
  to_node0_.clear();
}

void Client::on_control() {
  char buffer[4096];
  const ssize_t n = ::read(control_.get(), buffer, sizeof buffer);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n <= 0) return lost_node0(n == 0 ? "it closed the connection" : net::errno_text(errno));
  control_reader_.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
  try {
    while (std::optional<Frame> frame = control_reader_.next()) {
      if (frame->type == FrameType::NodeAttempt) {
        pending_run_ = std::atoi(frame->payload.c_str());
      } else if (frame->type == FrameType::NodeEnd) {
        end_ = decode_end(frame->payload).value_or(JobEnd{kExitLaunch, "launch_failed", ""});
        control_.reset();  // node 0 closes too: nothing more comes
        if (agent_) agent_->close_write();
        return;
      }
    }
  } catch (const std::exception& e) {
    lost_node0(std::string("garbled data: ") + e.what());
  }
}

void Client::on_signal() {
  signalfd_siginfo info{};
  while (::read(signal_fd_.get(), &info, sizeof info) == sizeof info) {
    const int sig = static_cast<int>(info.ssi_signo);
    std::string why;
    if (control_ && send_frame(control_.get(), FrameType::NodeSignal, std::to_string(sig),
                               Clock::now() + std::chrono::seconds(2), &why)) {
      continue;  // node 0 decides for the whole job
    }
    if (sig != SIGINT && sig != SIGTERM && sig != SIGHUP) continue;
    if (!lost_ && !end_) lost_ = 128 + sig;
    agent_.reset();  // SIGKILL to the agent; its ranks die with it
    link_.reset();
  }
}

std::vector<pollfd> Client::poll_set() const {
  std::vector<pollfd> fds = {{signal_fd_.get(), POLLIN, 0}};
  if (control_) fds.push_back({control_.get(), POLLIN, 0});
  if (link_) {
    short events = !node0_eof_ && to_agent_.size() <= kBufferLimit ? POLLIN : 0;
    if (!to_node0_.empty()) events |= POLLOUT;
    if (events) fds.push_back({link_.get(), events, 0});
  }
  if (agent_) {
    if (!agent_eof_ && to_node0_.size() <= kBufferLimit) fds.push_back({agent_->read_fd(), POLLIN, 0});
    if (!to_agent_.empty() && agent_->write_fd() >= 0) fds.push_back({agent_->write_fd(), POLLOUT, 0});
  }
  return fds;
}

void Client::dispatch(const pollfd& p) {
  if (p.fd == signal_fd_.get()) return on_signal();
  if (control_ && p.fd == control_.get()) return on_control();
  if (link_ && p.fd == link_.get()) {
    if (p.revents & POLLOUT) flush(link_.get(), to_node0_);
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) on_from_node0();
    return;
  }
  if (!agent_) return;
  if (p.fd == agent_->read_fd()) on_from_agent();
  else if (p.fd == agent_->write_fd()) flush(agent_->write_fd(), to_agent_);
}

int Client::run() {
  const sigset_t set = job_signals();
  signal_fd_.reset(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!signal_fd_)
    throw Error(Error::Code::Io, std::string("cannot watch the job's signals (signalfd): ") + std::strerror(errno));
  if (!join()) return *exit_;
  while (!exit_) {
    check_run();
    if (!busy() && (end_ || lost_)) {
      if (lost_) {
        exit_ = *lost_;
      } else {
        if (!end_->summary.empty()) std::cerr << end_->summary << "\n";
        finish(end_->status, end_->outcome, end_->summary);
      }
      break;
    }
    std::vector<pollfd> fds = poll_set();
    ::poll(fds.data(), fds.size(), 100);
    for (const pollfd& p : fds) {
      if (p.revents) dispatch(p);
    }
  }
  return *exit_;
}

}  // namespace

int run_node_client(const ClientOptions& options, ReportRecorder& report) {
  Client client(options, report);
  return client.run();
}

}  // namespace trainrun::cli::node
