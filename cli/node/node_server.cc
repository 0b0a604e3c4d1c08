#include "cli/node/node_server.h"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <iostream>

#include "cli/node/node_io.h"
#include "cli/plan/printable.h"
#include "cli/process/wait_status.h"
#include "os/net.h"
#include "rendezvous/auth.h"
#include "trainrun/version.h"

namespace trainrun::cli::node {
namespace {

constexpr std::chrono::seconds kHandshake{10};
constexpr std::size_t kMaxPending = 64;
constexpr int kKeepaliveS = 15;
constexpr std::chrono::seconds kFirstWaitNote{10}, kWaitNoteEvery{60};

net::Deadline soon() { return std::chrono::steady_clock::now() + std::chrono::seconds(2); }

std::string who(const NodeInfo& node) {
  return "node " + std::to_string(node.rank) + " (" + printable(node.name) + ", " + node.address + ")";
}

void say(const NodeServer::Note& note, const std::string& line) {
  if (note) note(line);
  else std::cerr << line << "\n";
}

}  // namespace

NodeServer::NodeServer(NodeSettings settings, SharedSecret secret, UniqueFd listener, NodeInfo self, bool verbose)
    : settings_(std::move(settings)), secret_(std::move(secret)), listener_(std::move(listener)),
      self_(std::move(self)), verbose_(verbose) {
  self_.name = self_.host;
}

std::string NodeServer::unique_name(const std::string& host, int rank) const {
  const std::string name = host.empty() ? "node" + std::to_string(rank) : host;
  bool taken = self_.name == name;
  for (const auto& [other, control] : controls_) taken |= control.node.name == name;
  return taken ? name + "#" + std::to_string(rank) : name;
}

void NodeServer::add_fds(std::vector<pollfd>& fds) {
  expire_pending();
  fds.push_back({listener_.get(), POLLIN, 0});
  for (const Pending& p : pending_) fds.push_back({p.fd.get(), POLLIN, 0});
  for (const auto& [rank, control] : controls_) fds.push_back({control.fd.get(), POLLIN, 0});
}

bool NodeServer::owns(int fd) const {
  if (fd == listener_.get()) return true;
  for (const Pending& p : pending_) {
    if (p.fd.get() == fd) return true;
  }
  for (const auto& [rank, control] : controls_) {
    if (control.fd.get() == fd) return true;
  }
  return false;
}

void NodeServer::on_ready(const pollfd& ready, const Note& note) {
  if (ready.fd == listener_.get()) return accept_all();
  for (Pending& p : pending_) {
    if (p.fd.get() == ready.fd) return read_pending(p, note);
  }
  for (auto& [rank, control] : controls_) {
    if (control.fd.get() == ready.fd) return read_control(control, note);
  }
}

void NodeServer::accept_all() {
  while (true) {
    UniqueFd fd(::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd) return;  // EAGAIN, or an error the next connection may not have
    net::set_keepalive(fd.get(), kKeepaliveS);
    if (pending_.size() >= kMaxPending) pending_.erase(pending_.begin());  // the oldest handshake goes first
    Pending p{std::move(fd), rendezvous::random_hex(16), {}, Clock::now() + kHandshake};
    std::string why;
    if (send_frame(p.fd.get(), FrameType::NodeChallenge, p.challenge, soon(), &why)) pending_.push_back(std::move(p));
  }
}

void NodeServer::expire_pending() {
  const auto now = Clock::now();
  pending_.erase(std::remove_if(pending_.begin(), pending_.end(), [&](const Pending& p) { return now >= p.deadline; }),
                 pending_.end());
}

void NodeServer::read_pending(Pending& pending, const Note& note) {
  char buffer[4096];
  const ssize_t n = ::read(pending.fd.get(), buffer, sizeof buffer);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  const int fd = pending.fd.get();
  const auto forget = [&] {
    pending_.erase(std::remove_if(pending_.begin(), pending_.end(), [&](const Pending& p) { return &p == &pending; }),
                   pending_.end());
  };
  if (n <= 0) return forget();
  pending.reader.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
  std::optional<Frame> frame;
  try {
    frame = pending.reader.next();
  } catch (const std::exception&) {
    return forget();  // not a trainrun node: nothing to say to it
  }
  if (!frame) return;
  if (frame->type != FrameType::NodeJoin) return forget();
  const JoinCheck check = check_join(frame->payload, secret_, pending.challenge);
  std::string why = check.join ? refusal(*check.join) : check.refusal;
  if (!why.empty()) {
    std::string ignored;
    send_frame(fd, FrameType::NodeRefused, why, soon(), &ignored);
    if (verbose_) say(note, "trainrun: refused a node from " + net::peer_address(fd) + ": " + why);
    return forget();
  }
  take_join(pending, *check.join, note);
  forget();
}

// Why `join` cannot be taken, as one line for the node; "" when it can.
std::string NodeServer::refusal(const Join& join) const {
  const std::string node = "node " + std::to_string(join.node_rank);
  if (join.job != settings_.job_id) {
    return "this node is of job " + quoted(join.job) + " and node 0 of job " + quoted(settings_.job_id) +
           " (--rdzv-id)";
  }
  if (join.version != kVersion) {
    return "this node runs trainrun " + printable(join.version) + " and node 0 trainrun " + std::string(kVersion) +
           ": run the same trainrun on every node";
  }
  if (join.kind == ConnectionKind::Agent) {
    for (const auto& [rank, control] : controls_) {
      if (control.token == join.token && !join.token.empty()) {
        return join.attempt == run_ ? ""
                                    : "an agent for run " + std::to_string(join.attempt) + " of the job, which runs " +
                                          std::to_string(run_) + " now";
      }
    }
    return "an agent connection of no node that joined";
  }
  if (started_ && !settings_.elastic) return "the job has started (--nnodes " + std::to_string(settings_.nnodes) + ")";
  if (join.node_rank == 0) return "node rank 0 is node 0's, which serves the job: give each node its own --node-rank";
  if (join.node_rank >= settings_.max_nnodes) {
    return "--node-rank " + std::to_string(join.node_rank) + " is not below node 0's --nnodes " +
           std::to_string(settings_.max_nnodes);
  }
  if (join.node_rank > 0 && controls_.count(join.node_rank)) {
    return node + " has joined already, from " + who(controls_.at(join.node_rank).node);
  }
  if (join.node_rank < 0 && free_rank() < 0) {
    return "the job has its " + std::to_string(settings_.max_nnodes) + " nodes already (--nnodes)";
  }
  return "";
}

int NodeServer::free_rank() const {
  for (int rank = 1; rank < settings_.max_nnodes; ++rank) {
    if (!controls_.count(rank)) return rank;
  }
  return -1;
}

void NodeServer::take_join(Pending& pending, const Join& join, const Note& note) {
  const int fd = pending.fd.get();
  if (join.kind == ConnectionKind::Agent) {
    for (auto& [rank, control] : controls_) {
      if (control.token != join.token) continue;
      std::string ignored;
      const Welcome welcome{rank, settings_.nnodes, control.token};
      if (send_frame(fd, FrameType::NodeWelcome, encode_welcome(welcome, secret_, join.nonce), soon(), &ignored)) {
        agents_[rank] = std::move(pending.fd);
      }
      return;
    }
    return;
  }
  const int rank = join.node_rank > 0 ? join.node_rank : free_rank();
  Control control{{rank, unique_name(printable(join.host), rank), join.host, net::peer_address(fd), join.nproc},
                  {},
                  {},
                  rendezvous::random_hex(16)};
  const Welcome welcome{rank, settings_.nnodes, control.token};
  std::string why;
  if (!send_frame(fd, FrameType::NodeWelcome, encode_welcome(welcome, secret_, join.nonce), soon(), &why)) return;
  if (self_.address.empty()) self_.address = net::own_address(fd);
  control.fd = std::move(pending.fd);
  if (verbose_) {
    say(note, "trainrun: " + who(control.node) + " joined with " + std::to_string(join.nproc) + " rank(s)");
  }
  controls_.emplace(rank, std::move(control));
  ++version_;
}

void NodeServer::read_control(Control& control, const Note& note) {
  char buffer[4096];
  const ssize_t n = ::read(control.fd.get(), buffer, sizeof buffer);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n <= 0) {
    return drop_control(control.node.rank, n == 0 ? "its trainrun closed the connection" : net::errno_text(errno),
                        note);
  }
  control.reader.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
  try {
    while (std::optional<Frame> frame = control.reader.next()) {
      if (frame->type != FrameType::NodeSignal) continue;
      const int sig = std::atoi(frame->payload.c_str());
      if (sig <= 0 || sig >= NSIG) continue;
      say(note, "trainrun: " + who(control.node) + " received " + signal_name(sig));
      ::kill(::getpid(), sig);  // blocked everywhere: the supervisor's signalfd takes it
    }
  } catch (const std::exception& e) {
    drop_control(control.node.rank, std::string("garbled data: ") + e.what(), note);
  }
}

void NodeServer::drop_control(int rank, const std::string& why, const Note& note) {
  // While a run goes on the node's agent connection ends too, and the
  // supervisor names the lost host; before, the node's rank is free again.
  if (verbose_ || !started_) say(note, "trainrun: " + who(controls_.at(rank).node) + " left: " + why);
  controls_.erase(rank);
  agents_.erase(rank);
  ++version_;
}

bool NodeServer::pump(std::chrono::milliseconds wait, int signal_fd, const Note& note) {
  std::vector<pollfd> fds;
  if (signal_fd >= 0) fds.push_back({signal_fd, POLLIN, 0});
  add_fds(fds);
  if (::poll(fds.data(), fds.size(), static_cast<int>(wait.count())) <= 0) return false;
  for (const pollfd& p : fds) {
    if (!p.revents) continue;
    if (p.fd == signal_fd) return true;
    if (owns(p.fd)) on_ready(p, note);  // may close others of `fds`: look again
  }
  return false;
}

std::string NodeServer::missing() const {
  std::string ranks;
  int count = 0;
  for (int rank = 1; rank < settings_.nnodes; ++rank) {
    if (controls_.count(rank)) continue;
    ranks += (ranks.empty() ? "" : ", ") + std::to_string(rank);
    ++count;
  }
  return (count == 1 ? "node " : "nodes ") + ranks;
}

NodeServer::Joined NodeServer::join(int signal_fd) {
  const auto started = Clock::now();
  const auto deadline = started + settings_.join_timeout;
  auto next_note = started + kFirstWaitNote;
  std::optional<Clock::time_point> min_reached;
  Joined joined;
  const int others = settings_.nnodes - 1;
  while (true) {
    const int have = static_cast<int>(controls_.size());
    if (have >= others && !min_reached) min_reached = Clock::now();
    const bool full = have >= settings_.max_nnodes - 1;
    if (full || (min_reached && (!settings_.elastic || Clock::now() >= *min_reached + settings_.last_call))) break;
    const auto now = Clock::now();
    if (now >= deadline) {
      const std::string which =
          settings_.node_rank < 0 && settings_.max_nnodes > 2
              ? std::to_string(others - have) + " of " + std::to_string(settings_.nnodes) + " nodes"
              : missing() + " of " + std::to_string(settings_.nnodes);
      joined.error = which + " did not join node 0 at " + settings_.endpoint() + " within " +
                     std::to_string(settings_.join_timeout.count()) + " s (--rdzv-conf join_timeout=S)";
      return joined;
    }
    if (now >= next_note) {
      say({}, "trainrun: waiting for " + missing() + " of " + std::to_string(settings_.nnodes) + " to join at " +
                  settings_.endpoint() + " (" + std::to_string(have + 1) + " here)");
      next_note = now + kWaitNoteEvery;
    }
    if (pump(std::chrono::milliseconds(100), signal_fd, {})) {
      signalfd_siginfo info{};
      if (::read(signal_fd, &info, sizeof info) == sizeof info) joined.signal = static_cast<int>(info.ssi_signo);
      if (joined.signal == SIGINT || joined.signal == SIGTERM || joined.signal == SIGHUP) return joined;
      joined.signal = 0;  // SIGUSR1/2, SIGQUIT: no rank to give them to yet
    }
  }
  started_ = true;
  joined.ok = true;
  return joined;
}

std::vector<NodeInfo> NodeServer::nodes() const {
  std::vector<NodeInfo> all = {self_};
  for (const auto& [rank, control] : controls_) all.push_back(control.node);
  return all;
}

std::vector<HostSlots> NodeServer::hosts() const {
  std::vector<HostSlots> hosts;
  for (const NodeInfo& node : nodes()) hosts.push_back({node.name, node.nproc, "", node.address});
  return hosts;
}

std::string NodeServer::gone(const std::string& host) const {
  return "node " + host + " left the job (its trainrun's connection to node 0 closed)";
}

UniqueFd NodeServer::agent_for(const std::string& name, std::chrono::milliseconds timeout, std::string* error) {
  for (auto& [rank, control] : controls_) {
    if (control.node.name != name) continue;
    const int node = rank;
    agents_.erase(node);
    std::string why;
    if (!send_frame(control.fd.get(), FrameType::NodeAttempt, std::to_string(run_), soon(), &why)) {
      *error = "cannot ask " + who(control.node) + " for its agent: " + why;
      return UniqueFd();
    }
    const auto deadline = Clock::now() + timeout;
    while (!agents_.count(node) && controls_.count(node) && Clock::now() < deadline) {
      pump(std::chrono::milliseconds(50), -1, {});
    }
    auto found = agents_.find(node);
    if (found == agents_.end()) {
      *error = "node " + name + " did not start its agent";
      return UniqueFd();
    }
    UniqueFd socket = std::move(found->second);
    agents_.erase(found);
    return socket;
  }
  *error = "no node " + name + " has joined";
  return UniqueFd();
}

NodeServer::Agents NodeServer::agents(int run, std::chrono::milliseconds timeout) {
  run_ = run;
  agents_.clear();
  Agents result;
  std::vector<int> dead;
  for (auto& [rank, control] : controls_) {
    std::string why;
    if (!send_frame(control.fd.get(), FrameType::NodeAttempt, std::to_string(run), soon(), &why)) dead.push_back(rank);
  }
  for (int rank : dead) drop_control(rank, "cannot ask it to start its agent", {});
  const std::size_t expected = controls_.size();
  const auto deadline = Clock::now() + timeout;
  while (agents_.size() < controls_.size() && Clock::now() < deadline) pump(std::chrono::milliseconds(100), -1, {});
  if (controls_.size() < expected ||
      (!settings_.elastic && static_cast<int>(controls_.size()) + 1 < settings_.nnodes)) {
    result.error = "a node left before run " + std::to_string(run) + " of the job could start";
    return result;
  }
  for (auto& [rank, control] : controls_) {
    auto found = agents_.find(rank);
    if (found == agents_.end()) {
      result.error = who(control.node) + " did not start its agent within " +
                     std::to_string(std::chrono::duration_cast<std::chrono::seconds>(timeout).count()) + " s";
      result.sockets.clear();
      return result;
    }
    result.sockets.push_back(std::move(found->second));
  }
  agents_.clear();
  return result;
}

void NodeServer::end(const JobEnd& end, std::chrono::milliseconds linger) {
  for (auto& [rank, control] : controls_) {
    std::string why;
    send_frame(control.fd.get(), FrameType::NodeEnd, encode_end(end), soon(), &why);
    ::shutdown(control.fd.get(), SHUT_WR);
  }
  started_ = true;  // what leaves now is no news
  verbose_ = false;
  const auto deadline = Clock::now() + linger;
  while (!controls_.empty() && Clock::now() < deadline)
    pump(std::chrono::milliseconds(50), -1, [](const std::string&) {});
  controls_.clear();
}

}  // namespace trainrun::cli::node
