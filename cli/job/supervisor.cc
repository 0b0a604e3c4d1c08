#include "cli/job/supervisor.h"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <unordered_map>

#include "cli/report/stack_dumps.h"
#include "contract/decimal.h"
#include "rendezvous/kv_table.h"
#include "contract/environment.h"
#include "contract/kv_keys.h"
#include "trainrun/error.h"

namespace trainrun::cli {
namespace {

// Past this much unsent data to an agent, trainrun stops reading its stdin.
constexpr std::size_t kPeerOutboundLimit = 1u << 20;

// Reading a terminal from the background would stop trainrun (SIGTTIN).
bool stdin_usable() {
  if (!::isatty(0)) return true;
  return ::tcgetpgrp(0) == ::getpgrp();
}

// `job` as `link`'s host is told it: without TRAINRUN_SECRET where the host
// works it out itself.
JobSpec told(const AgentLink& link, JobSpec job) {
  if (!link.derives_secret()) return job;
  const std::string prefix = std::string(contract::kEnvSecret) + "=";
  for (RankSpec& rank : job.ranks) {
    rank.env.erase(std::remove_if(rank.env.begin(), rank.env.end(),
                                  [&](const std::string& entry) { return entry.rfind(prefix, 0) == 0; }),
                   rank.env.end());
  }
  return job;
}

}  // namespace

struct Supervisor::Peer {
  AgentLink* link;
  FrameReader reader;
  std::string outbound;  // a relayed host's frames go to its relay's, wrapped
  bool eof = false;
  bool closed = false;  // we sent EOF (job over on our side)
  // A tree of agents (cli/tree): the peer that relays for this one and this
  // one's place among its children; the peers it relays for, by place.
  std::optional<std::size_t> relay;
  std::uint32_t child = 0;
  std::vector<std::size_t> children;
};

Supervisor::Supervisor(SupervisorOptions options, JobState& state, OutputRouter& output,
                       const rendezvous::KvTable* rendezvous)
    : options_(options), state_(state), output_(output), rendezvous_(rendezvous) {
  const sigset_t set = job_signals();
  signal_fd_.reset(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!signal_fd_) {
    // Without it Ctrl-C, SIGTERM and SIGHUP would stay blocked and unread.
    throw Error(Error::Code::Io, std::string("cannot watch the job's signals (signalfd): ") + std::strerror(errno));
  }
}

Supervisor::~Supervisor() = default;

void Supervisor::send_all(FrameType type, const std::string& payload) {
  for (Peer& peer : peers_) send(peer, type, 0, payload);
}

void Supervisor::send(Peer& peer, FrameType type, std::uint32_t rank, std::string_view payload) {
  if (peer.eof || peer.closed) return;
  std::string frame;
  append_frame(frame, type, rank, 0, payload);
  deliver(peer, frame);
}

// `frames` (whole frames, or "" for EOF to a relayed peer) on their way:
// a relayed peer's inside a ToChild frame to its relay, and so up the tree.
void Supervisor::deliver(Peer& peer, std::string_view frames) {
  if (!peer.relay) return peer.outbound.append(frames), void();
  Peer& relay = peers_[*peer.relay];
  if (relay.eof || relay.closed) return;
  std::string wrapped;
  append_frame(wrapped, FrameType::ToChild, peer.child, 0, frames);
  deliver(relay, wrapped);
}

// Whole frames to `peer`, one ToChild frame each where it is relayed.
void Supervisor::send_frames(Peer& peer, const std::string& frames) {
  if (!peer.relay) return peer.outbound.append(frames), void();
  FrameReader reader;
  reader.feed(frames);
  while (auto frame = reader.next()) deliver(peer, encode_frame(*frame));
}

void Supervisor::close_peer(Peer& peer) {
  if (peer.closed) return;
  if (peer.relay) deliver(peer, "");
  else peer.link->close_write();
  peer.closed = true;
}

// The outbound queue `peer`'s frames join: its own, or its tree's top's.
const std::string& Supervisor::outbound_of(const Peer& peer) const {
  return peer.relay ? outbound_of(peers_[*peer.relay]) : peer.outbound;
}

Supervisor::Peer* Supervisor::find_peer(const std::string& host) {
  for (Peer& peer : peers_) {
    if (peer.link->host() == host && !peer.eof && !peer.closed) return &peer;
  }
  return nullptr;
}

void Supervisor::add_agent(std::unique_ptr<AgentLink> agent, const JobSpec& job) {
  std::string frames;
  append_job_frames(frames, told(*agent, job));
  new_agents_.emplace_back(std::move(agent), std::move(frames));
}

// Between turns of the loop, never while it walks peers_.
void Supervisor::take_new_agents() {
  for (auto& [link, frames] : new_agents_) {
    peers_.push_back(Peer{link.get(), {}, std::move(frames), false, false, std::nullopt, 0, {}});
    agents_->push_back(std::move(link));
  }
  new_agents_.clear();
}

bool Supervisor::add_ranks(const std::string& host, const JobSpec& more) {
  Peer* peer = find_peer(host);
  if (!peer) return false;
  send(*peer, FrameType::AddRanks, 0, encode_job(told(*peer->link, more)));
  return true;
}

void Supervisor::stop_host(const std::string& host) {
  if (Peer* peer = find_peer(host)) send(*peer, FrameType::Terminate, 0, "");
}

void Supervisor::kill_rank(const std::string& host, int rank) {
  if (Peer* peer = find_peer(host)) send(*peer, FrameType::KillRank, static_cast<std::uint32_t>(rank), "");
}

void Supervisor::apply(JobState::Action action) {
  if (action == JobState::Action::Teardown) {
    send_all(FrameType::Terminate, "");
    // Agents SIGKILL at the end of the grace period; this is the backstop.
    kill_at_ = Clock::now() + std::chrono::milliseconds(static_cast<long long>(options_.grace_s * 1000) + 2000);
  } else if (action == JobState::Action::Kill) {
    send_all(FrameType::Kill, "");
    kill_at_ = Clock::now() + std::chrono::milliseconds(2000);
  }
}

void Supervisor::on_frame(Peer& peer, const Frame& frame) {
  switch (frame.type) {
    case FrameType::Hello: return;
    case FrameType::Started:
      if (options_.events) options_.events->started(static_cast<int>(frame.rank), std::atoi(frame.payload.c_str()));
      return state_.started(static_cast<int>(frame.rank), std::atoi(frame.payload.c_str()));
    case FrameType::Output:
      output_.add(static_cast<int>(frame.rank), frame.stream, frame.payload, output_clock());
      if (options_.events && frame.stream == 2)
        options_.events->wrote_stderr(static_cast<int>(frame.rank), frame.payload);
      if (stacks_ && frame.stream == 2) {  // after the line that calls for a dump
        if (auto request = stacks_->stderr_bytes(static_cast<int>(frame.rank), frame.payload, Clock::now())) {
          request_stacks(request->reason, request->skip);
        }
      }
      return;
    case FrameType::Exited: {
      const int rank = static_cast<int>(frame.rank);
      if (options_.events) options_.events->exited(rank, frame.payload);
      const int status = std::atoi(frame.payload.c_str());
      if (control_ && rank < state_.size() && control_->absorb_exit(rank, status)) return state_.retired(rank, status);
      const JobState::Action action = state_.exited(rank, status);
      if (action == JobState::Action::Teardown) {
        output_.note("trainrun: " + state_.describe(rank) + "; " + options_.on_failure);
      } else if (options_.verbose) {
        output_.note("trainrun: " + state_.describe(rank));
      }
      return apply(action);
    }
    case FrameType::StackTrace:
    case FrameType::StacksDone: return stacks_frame(peer, frame);
    case FrameType::Fatal:
      output_.note("trainrun: agent on " + peer.link->host() + ": " + frame.payload);
      return lose_host(peer, "the agent on " + peer.link->host() + " failed: " + frame.payload);
    case FrameType::FromChild:
    case FrameType::ChildGone: return relayed_frame(peer, frame);
    default: return;
  }
}

void Supervisor::on_readable(Peer& peer) {
  char buffer[65536];
  const ssize_t n = ::read(peer.link->read_fd(), buffer, sizeof buffer);
  if (n > 0) return on_bytes(peer, std::string_view(buffer, static_cast<std::size_t>(n)));
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  on_eof(peer, peer.link->failure());
}

void Supervisor::on_bytes(Peer& peer, std::string_view bytes) {
  peer.reader.feed(bytes);
  try {
    while (auto frame = peer.reader.next()) {
      on_frame(peer, *frame);
      if (peer.eof) return;
    }
  } catch (const std::exception& e) {
    on_eof(peer, "garbled data from the agent on " + peer.link->host() + ": " + e.what());
  }
}

// A frame of a peer this one relays for, or the end of its connection.
void Supervisor::relayed_frame(Peer& relay, const Frame& frame) {
  if (frame.rank >= relay.children.size()) return;
  Peer& child = peers_[relay.children[frame.rank]];
  if (child.eof) return;
  if (frame.type == FrameType::FromChild) return on_bytes(child, frame.payload);
  on_eof(child, frame.payload.empty() ? std::nullopt : std::optional<std::string>(frame.payload));
}

// The agent's connection ended (`why`, when it was lost); so did those of
// every host reached through it.
void Supervisor::on_eof(Peer& peer, const std::optional<std::string>& why) {
  if (peer.eof) return;
  peer.eof = true;
  const std::string& host = peer.link->host();
  if (stacks_) stacks_->host_done(host, "its agent went away");
  if (state_.running_on(host) != 0) {
    // The agent is gone while its ranks were running: the host is lost.
    const std::string reason = why ? *why : "lost connection to " + host;
    lost_note_ = "trainrun: " + reason;
    output_.note(lost_note_);
    lose_host(peer, reason);
  }
  const std::string first_note = lost_note_;  // what the job's summary repeats: this host's loss
  for (const std::size_t c : peer.children) {
    on_eof(peers_[c], "lost connection to " + peers_[c].link->host() + ": it was reached through " + host +
                          ", whose agent is gone");
  }
  lost_note_ = first_note;
}

void Supervisor::lose_host(Peer& peer, const std::string& reason) {
  if (control_ && control_->absorb_host_lost(peer.link->host(), reason)) {
    state_.abandon(peer.link->host());
    close_peer(peer);  // the agent, if alive, ends its ranks
    return;
  }
  state_.abandon(peer.link->host());
  apply(state_.host_lost(reason));
}

void Supervisor::on_signal() {
  signalfd_siginfo info;
  while (::read(signal_fd_.get(), &info, sizeof info) == sizeof info) {
    const int sig = static_cast<int>(info.ssi_signo);
    if (sig == SIGQUIT) {  // Ctrl-\: a look at every rank; the job goes on
      request_stacks("SIGQUIT");
      continue;
    }
    if (sig == SIGUSR1 || sig == SIGUSR2) {
      send_all(FrameType::Signal, std::to_string(sig));
      continue;
    }
    const JobState::Action action = state_.stop_signal(sig);
    if (action == JobState::Action::Teardown) {
      output_.note("trainrun: received " + signal_name(sig) + ", stopping the job (again to kill at once)");
    } else if (!options_.on_failure.empty() && state_.late_signal() == sig && action != JobState::Action::Kill) {
      output_.note("trainrun: received " + signal_name(sig) + " while the job stops for a restart: no restart");
    } else if (action == JobState::Action::Kill) {
      output_.note("trainrun: received " + signal_name(sig) + " again, killing the job");
    }
    apply(action);
  }
}

void Supervisor::forward_stdin() {
  Peer& target = peers_[stdin_peer_];
  const auto rank = static_cast<std::uint32_t>(options_.stdin_rank);
  char buffer[65536];
  const ssize_t n = ::read(0, buffer, sizeof buffer);
  if (n > 0) {
    send(target, FrameType::Stdin, rank, std::string_view(buffer, static_cast<std::size_t>(n)));
  } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
    send(target, FrameType::StdinEof, rank, "");
    stdin_open_ = false;
  }
}

std::vector<int> Supervisor::unregistered_ranks() const {
  std::vector<int> missing;
  bool any = false;
  for (int rank = 0; rank < state_.size(); ++rank) {
    const std::string key =
        std::string(contract::kScopeJob) + "/" + std::string(contract::kKeyRankPrefix) + std::to_string(rank);
    if (rendezvous_->get(key)) {
      any = true;
    } else if (!state_.has_exited(rank) || state_.exited_with_zero(rank)) {
      missing.push_back(rank);
    }
  }
  // A program that never calls trainrun::init() has no rendezvous to reach;
  // where some rank did, one that exited 0 without it leaves them waiting.
  return any ? missing : std::vector<int>{};
}

void Supervisor::check_start_timeout() {
  if (start_checked_ || !rendezvous_) return;
  if (Clock::now() - started_ < std::chrono::seconds(options_.start_timeout_s)) return;
  start_checked_ = true;
  const std::vector<int> missing = unregistered_ranks();
  const JobState::Action action = state_.start_timeout(missing, options_.start_timeout_s);
  if (action == JobState::Action::Teardown) output_.note(state_.summary());
  apply(action);
}

void Supervisor::start_peers(std::vector<std::unique_ptr<AgentLink>>& agents, const std::vector<JobSpec>& jobs) {
  started_ = Clock::now();
  agents_ = &agents;
  std::unordered_map<const AgentLink*, std::size_t> index;
  for (std::size_t i = 0; i < agents.size(); ++i) {
    peers_.push_back(Peer{agents[i].get(), {}, {}, false, false, std::nullopt, 0, {}});
    index[agents[i].get()] = i;
    if (const std::optional<AgentLink::Route> route = agents[i]->relayed()) {
      Peer& relay = peers_[index.at(route->through)];  // a relay comes before the hosts it relays for
      peers_.back().relay = index.at(route->through);
      peers_.back().child = route->child;
      if (relay.children.size() <= route->child) relay.children.resize(route->child + 1);
      relay.children[route->child] = i;
    }
    std::string frames;
    append_job_frames(frames, told(*agents[i], jobs[i]));
    send_frames(peers_.back(), frames);
  }
  stdin_open_ = false;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    for (const RankSpec& rank : jobs[i].ranks) {
      if (static_cast<int>(rank.rank) == options_.stdin_rank) {
        stdin_peer_ = i;
        stdin_open_ = stdin_usable();
      }
    }
  }
  if (options_.timeout_s > 0) {
    deadline_ = started_ + std::chrono::milliseconds(static_cast<long long>(options_.timeout_s * 1000));
  }
}

// Once every rank is done each agent may clean up its host and go; true
// when every agent has said its last (EOF): the job is over.
bool Supervisor::all_agents_done() {
  if (state_.all_exited() && (!control_ || control_->idle() || state_.tearing_down())) {
    // Relayed peers first: their EOF goes out through their relay's queue.
    for (auto peer = peers_.rbegin(); peer != peers_.rend(); ++peer) {
      if (!peer->closed && outbound_of(*peer).empty()) close_peer(*peer);
    }
  }
  for (const Peer& peer : peers_) {
    if (!peer.eof) return false;
  }
  return true;
}

// --timeout, the start timeout, and the backstop after a Terminate or Kill.
void Supervisor::check_deadlines(Clock::time_point now) {
  if (deadline_ && now >= *deadline_ && !state_.tearing_down()) {
    // Before the Terminate: agents answer in order.
    request_stacks("--timeout " + detail::shortest_decimal(options_.timeout_s) + " s expired");
    apply(state_.timed_out(options_.timeout_s));
  }
  print_stacks_when_due(false);
  check_start_timeout();
  if (kill_at_ && now >= *kill_at_) {
    send_all(FrameType::Kill, "");
    kill_at_ = now + std::chrono::seconds(2);
    // Agents that do not answer even a Kill are cut off.
    for (auto peer = peers_.rbegin(); peer != peers_.rend(); ++peer) close_peer(*peer);
  }
}

// The signalfd, the agents (not read while the console is back-pressured),
// stdin for its rank's agent, and the console when it has output waiting.
std::vector<pollfd> Supervisor::poll_set(bool backlogged) const {
  std::vector<pollfd> fds;
  fds.push_back({signal_fd_.get(), POLLIN, 0});
  for (const Peer& peer : peers_) {
    if (peer.link->read_fd() < 0) continue;  // a relayed host: read through its relay
    if (!peer.eof && !backlogged) fds.push_back({peer.link->read_fd(), POLLIN, 0});
    if (!peer.outbound.empty() && !peer.closed && peer.link->write_fd() >= 0) {
      fds.push_back({peer.link->write_fd(), POLLOUT, 0});
    }
  }
  if (stdin_open_ && outbound_of(peers_[stdin_peer_]).size() < kPeerOutboundLimit) fds.push_back({0, POLLIN, 0});
  for (int stream : {1, 2}) {
    if (output_.wants_write(stream)) fds.push_back({output_.fd(stream), POLLOUT, 0});
  }
  if (events_) events_->add_fds(fds);
  return fds;
}

void Supervisor::dispatch(const pollfd& p) {
  if (events_ && events_->owns(p.fd)) {
    events_->on_ready(p, [this](const std::string& line) { output_.note(line); });
  } else if (p.fd == signal_fd_.get()) {
    on_signal();
  } else if (p.fd == 0 && (p.events & POLLIN)) {
    forward_stdin();
  } else if (p.fd == output_.fd(1) || p.fd == output_.fd(2)) {
    output_.write_some(p.fd == output_.fd(1) ? 1 : 2);
  } else {
    for (Peer& peer : peers_) {
      if (p.fd == peer.link->read_fd() && (p.events & POLLIN)) {
        on_readable(peer);
        idle_ = false;
      }
      if (p.fd == peer.link->write_fd() && (p.events & POLLOUT)) {
        const ssize_t n = ::write(p.fd, peer.outbound.data(), peer.outbound.size());
        if (n > 0) peer.outbound.erase(0, static_cast<std::size_t>(n));
        else if (n < 0 && errno != EAGAIN && errno != EINTR) peer.outbound.clear();
      }
    }
  }
}

void Supervisor::run(std::vector<std::unique_ptr<AgentLink>>& agents, const std::vector<JobSpec>& jobs) {
  start_peers(agents, jobs);
  while (true) {
    const auto now = Clock::now();
    if (control_) {
      control_->tick();
      take_new_agents();
    }
    if (all_agents_done()) break;
    check_deadlines(now);
    // Unfinished lines go out only while no output is in flight, so a line
    // is never cut because trainrun itself was busy or back-pressured.
    if (idle_) output_.flush_stale(output_clock());
    const bool backlogged = output_.backlogged();
    std::vector<pollfd> fds = poll_set(backlogged);
    const auto polled = Clock::now();
    ::poll(fds.data(), fds.size(), 50);
    if (backlogged) held_back_ += Clock::now() - polled;
    idle_ = !backlogged;
    for (const pollfd& p : fds) {
      if (p.revents) dispatch(p);
    }
  }
  print_stacks_when_due(true);
  output_.finish();
}

void Supervisor::request_stacks(const std::string& reason, const std::vector<int>& skip) {
  if (!stacks_) return;
  std::vector<std::string> hosts;
  for (const Peer& peer : peers_) {
    if (!peer.eof && !peer.closed) hosts.push_back(peer.link->host());
  }
  if (!stacks_->begin({reason, skip}, hosts, Clock::now())) return;
  output_.note("trainrun: " + reason + ": taking the stack of every rank");
  send_all(FrameType::Stacks, encode_stack_skips(skip));
}

void Supervisor::stacks_frame(Peer& peer, const Frame& frame) {
  if (!stacks_) return;
  if (frame.type == FrameType::StackTrace) stacks_->add(static_cast<int>(frame.rank), frame.stream == 1, frame.payload);
  else stacks_->host_done(peer.link->host(), frame.payload);
}

void Supervisor::print_stacks_when_due(bool now) {
  if (stacks_ && (stacks_->due(Clock::now()) || (now && stacks_->in_progress()))) {
    output_.note(stacks_->finish(Clock::now()));
  }
}

}  // namespace trainrun::cli
