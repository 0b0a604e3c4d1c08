#include "backends/tcp/socket_mesh.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "backends/tcp/mesh_wiring.h"
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

// "host port" as published; IPv6 hosts contain ':' so a space separates.
std::pair<std::string, std::string> split_address(const std::string& published) {
  const std::size_t space = published.rfind(' ');
  if (space == std::string::npos) return {published, ""};
  return {published.substr(0, space), published.substr(space + 1)};
}

}  // namespace

SocketMesh::SocketMesh(int rank, int size, const rendezvous::Secret& secret, std::chrono::milliseconds timeout)
    : rank_(rank), size_(size), secret_(secret), timeout_(timeout), fds_(static_cast<std::size_t>(size), -1),
      addresses_(static_cast<std::size_t>(size)) {}

SocketMesh::~SocketMesh() = default;

std::unique_ptr<SocketMesh> SocketMesh::subset(const std::vector<int>& ranks) const {
  const auto me = std::find(ranks.begin(), ranks.end(), rank_);
  auto view = std::make_unique<SocketMesh>(static_cast<int>(me - ranks.begin()), static_cast<int>(ranks.size()),
                                           secret_, timeout_);
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    view->fds_[i] = fds_[ranks[i]];
    view->addresses_[i] = addresses_[ranks[i]];
    view->names_.push_back(names_.empty() ? ranks[i] : names_[ranks[i]]);
  }
  // Its waits warn as this mesh's do, naming the peer by this mesh's number.
  view->warn_interval_ = warn_interval_;
  view->spin_ = spin_;
  if (warn_) {
    view->warn_ = [warn = warn_, ranks](int peer, std::chrono::seconds waited) { warn(ranks[peer], waited); };
  }
  return view;
}

std::string SocketMesh::listen(const std::string& address) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_PASSIVE;
  addrinfo* result = nullptr;
  if (::getaddrinfo(address.c_str(), "0", &hints, &result) != 0 || !result) {
    io_error("direct mesh: cannot use address '" + address + "'");
  }
  listener_.reset(::socket(result->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const bool ok = listener_ && ::bind(listener_.get(), result->ai_addr, result->ai_addrlen) == 0 &&
                  ::listen(listener_.get(), SOMAXCONN) == 0;
  const int err = errno;
  ::freeaddrinfo(result);
  if (!ok) io_error("direct mesh: cannot listen on " + address + ": " + errno_text(err));
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  ::getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&bound), &length);
  const int port = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                               : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  return address + " " + std::to_string(port);
}

std::string SocketMesh::peer_name(int peer) const {
  return "rank " + std::to_string(names_.empty() ? peer : names_[peer]) + " (" + addresses_[peer] + ")";
}

void SocketMesh::connect(const std::vector<std::string>& published, std::chrono::milliseconds timeout,
                         const std::function<void()>& check) {
  std::vector<MeshWiring::Peer> peers;
  for (int peer = 0; peer < size_; ++peer) {
    auto [host, port] = split_address(published[peer]);
    addresses_[peer] = host + ":" + port;
    peers.push_back({std::move(host), std::move(port), peer_name(peer)});
  }
  if (!set_nonblocking(listener_.get())) io_error("direct mesh: fcntl: " + errno_text(errno));
  owned_ = MeshWiring(rank_, secret_, listener_.get(), std::move(peers)).run(Clock::now() + timeout, check);
  for (std::size_t peer = 0; peer < owned_.size(); ++peer) fds_[peer] = owned_[peer].get();
  listener_.reset();
}

void SocketMesh::exchange(int to, const void* send, std::size_t send_bytes, int from, void* recv,
                          std::size_t recv_bytes) {
  std::size_t sent = 0, received = 0;
  transfer(to, send, send_bytes, sent, true, from, recv, recv_bytes, recv_bytes, received);
}

void SocketMesh::transfer(int to, const void* send, std::size_t send_ready, std::size_t& sent, bool send_all, int from,
                          void* recv, std::size_t recv_bytes, std::size_t recv_needed, std::size_t& received) {
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

void SocketMesh::check_alive(int peer) const {
  char byte;
  const ssize_t n = ::recv(fds_[peer], &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
    io_error("connection to " + peer_name(peer) + " closed (did that rank exit?)");
  }
}

void SocketMesh::abort() noexcept {
  aborted_ = true;
  for (int fd : fds_) {
    if (fd >= 0) ::shutdown(fd, SHUT_RDWR);
  }
}

}  // namespace trainrun::detail
