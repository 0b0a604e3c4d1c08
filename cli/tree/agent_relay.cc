#include "cli/tree/agent_relay.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "cli/tree/agent_tree.h"
#include "cli/tree/relay_protocol.h"

namespace trainrun::cli {
namespace {

// After the launcher is gone, how long the relay waits for its children's
// agents to end their jobs (their own grace, and a lost one's silence limit).
constexpr std::chrono::seconds kChildrenEndLimit{40};

}  // namespace

struct AgentRelay::Child {
  std::unique_ptr<AgentLink> link;
  FrameReader reader;
  std::string outbound;
  bool close_after = false;  // EOF to it once `outbound` is out
  bool eof = false;
};

AgentRelay::AgentRelay() = default;

AgentRelay::~AgentRelay() {
  if (starter_.joinable()) starter_.join();
  for (Child& child : children_) child.link->finish(std::chrono::seconds(1));
}

bool AgentRelay::handle(const Frame& frame, const Send& up) {
  if (frame.type == FrameType::Relay) return start(frame, up), true;
  if (frame.type != FrameType::ToChild) return false;
  if (frame.rank >= children_.size()) return true;  // a child that was never started
  Child& child = children_[frame.rank];
  if (frame.payload.empty()) child.close_after = true;
  else if (!child.close_after) child.outbound += frame.payload;
  write_child(child);
  return true;
}

void AgentRelay::start(const Frame& frame, const Send& up) {
  std::optional<RelayRequest> request = decode_relay_request(frame.payload);
  int pipe_fds[2];
  if (!request || starter_.joinable() || !children_.empty() || ::pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    RelayReport refused;
    refused.rows.push_back(
        {"relay", "relay", request ? "cannot relay: a second request, or no pipe" : "malformed relay request", false});
    return up(FrameType::RelayReady, 0, encode_relay_report(refused));
  }
  wake_read_.reset(pipe_fds[0]);
  wake_write_.reset(pipe_fds[1]);
  starting_ = std::make_shared<RemoteAgents>();
  starter_ = std::thread([agents = starting_, request = std::move(*request), wake = wake_write_.get()] {
    *agents = start_agent_tree(request.hosts, request.options, request.probe, request.radix, false, false);
    const char byte = 1;
    (void)!::write(wake, &byte, 1);
  });
}

void AgentRelay::started(const Send& up) {
  starter_.join();
  wake_read_.reset();
  wake_write_.reset();
  RemoteAgents& agents = *starting_;
  RelayReport report{agents.ok, std::move(agents.rows), std::move(agents.answers)};
  for (std::unique_ptr<AgentLink>& link : agents.links) {
    // Hosts further down are their own relay's children, not ours.
    if (!link->relayed()) children_.push_back(Child{std::move(link), {}, {}, false, false});
  }
  starting_.reset();
  if (gone_) return launcher_gone();
  up(FrameType::RelayReady, 0, encode_relay_report(report));
}

void AgentRelay::add_fds(std::vector<pollfd>& fds, bool reading) {
  if (wake_read_) fds.push_back({wake_read_.get(), POLLIN, 0});
  for (const Child& child : children_) {
    if (!child.eof && reading) fds.push_back({child.link->read_fd(), POLLIN, 0});
    if (!child.outbound.empty() && child.link->write_fd() >= 0) {
      fds.push_back({child.link->write_fd(), POLLOUT, 0});
    }
  }
}

void AgentRelay::on_ready(const pollfd& ready, const Send& up) {
  if (wake_read_ && ready.fd == wake_read_.get()) return started(up);
  for (std::uint32_t i = 0; i < children_.size(); ++i) {
    Child& child = children_[i];
    if ((ready.events & POLLIN) && ready.fd == child.link->read_fd()) read_child(i, up);
    if ((ready.events & POLLOUT) && ready.fd == child.link->write_fd()) write_child(child);
  }
}

void AgentRelay::read_child(std::uint32_t index, const Send& up) {
  Child& child = children_[index];
  char buffer[65536];
  const ssize_t n = ::read(child.link->read_fd(), buffer, sizeof buffer);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n > 0) {
    child.reader.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
    try {
      while (auto frame = child.reader.next()) {
        if (frame->type != FrameType::Pong) up(FrameType::FromChild, index, encode_frame(*frame));
      }
      return;
    } catch (const std::exception& e) {
      child.link->close_write();
      child.eof = true;
      return up(FrameType::ChildGone, index, "garbled data from the agent on " + child.link->host() + ": " + e.what());
    }
  }
  child.eof = true;
  const std::optional<std::string> why = child.link->failure();
  const bool expected = child.close_after || gone_;
  up(FrameType::ChildGone, index, why ? *why : expected ? std::string() : "lost connection to " + child.link->host());
}

void AgentRelay::write_child(Child& child) {
  while (!child.outbound.empty() && child.link->write_fd() >= 0) {
    const ssize_t n = ::write(child.link->write_fd(), child.outbound.data(), child.outbound.size());
    if (n > 0) child.outbound.erase(0, static_cast<std::size_t>(n));
    else if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    else child.outbound.clear();
  }
  if (child.close_after && child.link->write_fd() >= 0) child.link->close_write();
}

void AgentRelay::launcher_gone() {
  if (!gone_) gone_at_ = std::chrono::steady_clock::now();
  gone_ = true;
  for (Child& child : children_) {
    child.outbound.clear();
    if (child.link->write_fd() >= 0) child.link->close_write();
  }
}

bool AgentRelay::done() const {
  if (starter_.joinable()) return false;  // its links end once it hands them over
  if (std::chrono::steady_clock::now() - gone_at_ > kChildrenEndLimit) return true;
  for (const Child& child : children_) {
    if (!child.eof) return false;
  }
  return true;
}

}  // namespace trainrun::cli
