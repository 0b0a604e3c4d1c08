#include "backends/tcp/socket_mesh.h"

#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "os/net.h"
#include "trainrun/error.h"

namespace trainrun::detail {
namespace {

[[noreturn]] void io_error(const std::string& message) { throw Error(Error::Code::Io, message); }

using net::errno_text;
using net::milliseconds_until;

// A transfer spins (SocketMesh::set_spin) only while at most this much is
// still to come: longer waits are the wire's, and spinning through them
// takes the CPU that the network stack needs to deliver them (4 KiB
// between two shaped hosts: 34 us spinning against 29 us asleep).
constexpr std::size_t kSpinMaxBytes = 2048;

std::vector<int> every_rank(int size) {
  std::vector<int> ranks(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) ranks[r] = r;
  return ranks;
}

}  // namespace

SocketMesh::SocketMesh(std::shared_ptr<PeerLinks> links, std::chrono::milliseconds timeout)
    : SocketMesh(links, {}, links->rank(), timeout) {}

SocketMesh::SocketMesh(std::shared_ptr<PeerLinks> links, std::vector<int> ranks, int rank,
                       std::chrono::milliseconds timeout)
    : rank_(rank), size_(ranks.empty() ? links->size() : static_cast<int>(ranks.size())), links_(std::move(links)),
      ranks_(ranks.empty() ? every_rank(size_) : std::move(ranks)), timeout_(timeout),
      fds_(static_cast<std::size_t>(size_), -1) {}

SocketMesh::~SocketMesh() = default;

std::unique_ptr<SocketMesh> SocketMesh::subset(const std::vector<int>& ranks) const {
  const auto me = std::find(ranks.begin(), ranks.end(), rank_);
  std::vector<int> linked;
  for (int r : ranks) linked.push_back(ranks_[r]);
  std::unique_ptr<SocketMesh> view(
      new SocketMesh(links_, std::move(linked), static_cast<int>(me - ranks.begin()), timeout_));
  for (std::size_t i = 0; i < ranks.size(); ++i) view->fds_[i] = fds_[ranks[i]];
  // Its waits warn as this mesh's do, naming the peer by this mesh's number.
  view->warn_interval_ = warn_interval_;
  view->spin_ = spin_;
  if (warn_) {
    view->warn_ = [warn = warn_, ranks](int peer, std::chrono::seconds waited) { warn(ranks[peer], waited); };
  }
  return view;
}

void SocketMesh::connect_links(int to, int from) {
  // Both are asked for first, so that their handshakes run at once.
  for (int peer : {to, from}) {
    if (peer >= 0 && fds_[peer] < 0) fds_[peer] = links_->find(PeerLinks::Channel::kMesh, ranks_[peer]);
  }
  for (int peer : {to, from}) {
    if (peer >= 0 && fds_[peer] < 0) fds_[peer] = await_link(peer);
  }
}

// Waits for the link as a transfer waits for bytes: warning each interval,
// failing at the collective timeout, woken by abort().
int SocketMesh::await_link(int peer) {
  const auto start = Clock::now();
  const auto deadline = start + timeout_;
  const bool warns = warn_interval_.count() > 0 && warn_;
  auto next_warning = warns ? start + warn_interval_ : deadline;
  while (true) {
    const int fd = links_->wait(PeerLinks::Channel::kMesh, ranks_[peer], std::min(deadline, next_warning));
    if (fd >= 0) return fd;
    const auto now = Clock::now();
    if (now >= deadline) {
      throw Error(Error::Code::Timeout,
                  "no progress with " + peer_name(peer) + " for " + std::to_string(timeout_.count() / 1000) + " s");
    }
    if (now >= next_warning) {
      warn_(peer, std::chrono::round<std::chrono::seconds>(now - start));
      next_warning += warn_interval_;
    }
  }
}

void SocketMesh::exchange(int to, const void* send, std::size_t send_bytes, int from, void* recv,
                          std::size_t recv_bytes) {
  std::size_t sent = 0, received = 0;
  transfer(to, send, send_bytes, sent, true, from, recv, recv_bytes, recv_bytes, received);
}

void SocketMesh::transfer(int to, const void* send, std::size_t send_ready, std::size_t& sent, bool send_all, int from,
                          void* recv, std::size_t recv_bytes, std::size_t recv_needed, std::size_t& received) {
  const bool sends = sent < send_ready, receives = received < recv_bytes;
  if ((sends && fds_[to] < 0) || (receives && fds_[from] < 0)) connect_links(sends ? to : -1, receives ? from : -1);
  const int out_fd = fds_[to], in_fd = fds_[from];
  const char* out = static_cast<const char*>(send);
  char* in = static_cast<char*>(recv);
  auto last_progress = Clock::now();
  const auto deadline = last_progress + timeout_;
  const bool warns = warn_interval_.count() > 0 && warn_;
  auto next_warning = warns ? last_progress + warn_interval_ : deadline;
  bool moved = false;  // since the last poll
  auto waiting = [&] { return received < recv_needed || (send_all && sent < send_ready); };
  bool first = true;               // a stream step with nothing to wait for still sends once
  Clock::time_point spin_until{};  // set at the first try that moves nothing
  while (first || waiting()) {
    first = false;
    // Move both directions without waiting; sleep in poll only when neither can.
    bool progressed = false;
    if (sent < send_ready) {
      const ssize_t n = ::send(out_fd, out + sent, send_ready - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        sent += static_cast<std::size_t>(n);
        progressed = true;
      } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        io_error("send to " + peer_name(to) + " failed: " + errno_text(errno) + (aborted_ ? " (aborted)" : ""));
      }
    }
    if (received < recv_bytes) {
      const ssize_t n = ::recv(in_fd, in + received, recv_bytes - received, MSG_DONTWAIT);
      if (n > 0) {
        received += static_cast<std::size_t>(n);
        progressed = true;
      } else if (n == 0) {
        io_error("connection to " + peer_name(from) + " closed (did that rank exit?)");
      } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        io_error("receive from " + peer_name(from) + " failed: " + errno_text(errno));
      }
    }
    if (progressed) {
      moved = true;
      continue;
    }
    if (!waiting()) break;
    if (spin_.count() > 0 && sent >= send_ready && recv_needed - received <= kSpinMaxBytes) {
      const auto now = Clock::now();
      if (spin_until == Clock::time_point{}) spin_until = now + spin_;
      if (now < spin_until) {
        ::sched_yield();  // a rank that shares this CPU runs first
        continue;
      }
    }

    if (moved && warns) {  // a wait warning counts from the last byte moved
      last_progress = Clock::now();
      next_warning = last_progress + warn_interval_;
      moved = false;
    }
    pollfd pfds[2];
    nfds_t count = 0;
    if (sent < send_ready) pfds[count++] = {out_fd, POLLOUT, 0};
    // Waiting to send, it keeps reading what may come: two ranks that both
    // wait to send never block each other.
    if (received < recv_needed || (sent < send_ready && received < recv_bytes)) {
      if (count == 1 && out_fd == in_fd) pfds[0].events |= POLLIN;
      else pfds[count++] = {in_fd, POLLIN, 0};
    }
    if (::poll(pfds, count, milliseconds_until(std::min(deadline, next_warning))) == 0) {
      const int stuck = received < recv_needed ? from : to;
      if (warns && Clock::now() < deadline) {
        warn_(stuck, std::chrono::round<std::chrono::seconds>(Clock::now() - last_progress));
        next_warning = std::min(deadline, next_warning + warn_interval_);
        continue;
      }
      throw Error(Error::Code::Timeout,
                  "no progress with " + peer_name(stuck) + " for " + std::to_string(timeout_.count() / 1000) + " s");
    }
    if (aborted_) io_error("aborted while talking to " + peer_name(received < recv_needed ? from : to));
  }
}

void SocketMesh::check_alive(int peer) {
  if (fds_[peer] < 0) fds_[peer] = links_->find(PeerLinks::Channel::kMesh, ranks_[peer]);
  if (fds_[peer] < 0) return;  // being made: its refusal is the news, if any
  char byte;
  const ssize_t n = ::recv(fds_[peer], &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
    io_error("connection to " + peer_name(peer) + " closed (did that rank exit?)");
  }
}

void SocketMesh::abort() noexcept {
  aborted_ = true;
  links_->abort();
}

}  // namespace trainrun::detail
