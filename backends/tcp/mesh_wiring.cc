#include "backends/tcp/mesh_wiring.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "backends/tcp/mesh_handshake.h"
#include "os/net.h"
#include "trainrun/error.h"

namespace trainrun::detail {
namespace hs = mesh_handshake;

// One connection in its handshake. Outgoing: read the challenge, send the
// reply, read the acceptance. Incoming: send the challenge, read the reply.
struct MeshWiring::Connection {
  UniqueFd fd;
  bool outgoing = false;
  int peer = -1;              // outgoing: the lower rank it goes to
  bool replied = false;       // outgoing: the reply is queued
  bool reconnect = false;     // outgoing: lost before acceptance; connect again
  std::string challenge;      // incoming: what this rank sent
  std::string in, out;        // received so far; still to send
  std::size_t want = 0;       // bytes to receive in all at this step
  Clock::time_point expires;  // incoming
  std::string from;           // incoming: "ADDR:PORT"
};

namespace {

std::string peer_address(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return "an unknown address";
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (address.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&address);
    ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
    return "[" + std::string(host) + "]:" + std::to_string(ntohs(a->sin6_port));
  }
  const auto* a = reinterpret_cast<const sockaddr_in*>(&address);
  ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
  port = ntohs(a->sin_port);
  return std::string(host) + ":" + std::to_string(port);
}

// Sends what is queued and receives up to `want` bytes without blocking.
// Returns "" or why the connection is lost.
std::string pump(int fd, std::string& out, std::string& in, std::size_t want) {
  while (!out.empty()) {
    const ssize_t n = ::send(fd, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      out.erase(0, static_cast<std::size_t>(n));
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      break;
    } else if (errno != EINTR) {
      return net::errno_text(errno);
    }
  }
  char buffer[128];
  while (in.size() < want) {
    const ssize_t n = ::recv(fd, buffer, std::min(sizeof buffer, want - in.size()), MSG_DONTWAIT);
    if (n > 0) {
      in.append(buffer, static_cast<std::size_t>(n));
    } else if (n == 0) {
      return "closed before the handshake ended";
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      break;
    } else if (errno != EINTR) {
      return net::errno_text(errno);
    }
  }
  return "";
}

}  // namespace

MeshWiring::MeshWiring(int rank, const rendezvous::Secret& secret, int listener, std::vector<Peer> peers, Log log,
                       std::chrono::milliseconds handshake_timeout)
    : rank_(rank), secret_(secret), listener_(listener), peers_(std::move(peers)),
      log_(log ? std::move(log) : [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); }),
      handshake_timeout_(handshake_timeout), fds_(peers_.size()) {}

MeshWiring::~MeshWiring() = default;

void MeshWiring::start_outgoing(int peer, Clock::time_point deadline, std::chrono::milliseconds pause) {
  int error = 0;
  UniqueFd fd = net::connect_tcp(peers_[peer].host, peers_[peer].port, deadline, &error);
  if (!fd && (error == EHOSTUNREACH || error == ENETUNREACH) && Clock::now() + pause < deadline) {
    retries_.push_back({peer, Clock::now() + pause, std::min(2 * pause, kRetryMost)});
    return;
  }
  if (!fd) {
    throw Error(Error::Code::Io, "direct mesh: cannot connect to " + peers_[peer].name + ": " + net::errno_text(error) +
                                     (pause > kRetryFirst ? " (tried again until the start timeout)" : ""));
  }
  Connection c;
  c.fd = std::move(fd);
  c.outgoing = true;
  c.peer = peer;
  c.want = hs::kChallengeBytes;
  pending_.push_back(std::move(c));
}

void MeshWiring::accept_incoming() {
  while (true) {
    UniqueFd accepted(::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    const int fd = accepted.get();
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE) {
        // Out of descriptors: make room by dropping the oldest stranger.
        auto oldest = std::find_if(pending_.begin(), pending_.end(), [](auto& c) { return !c.outgoing; });
        if (oldest != pending_.end()) {
          drop(*oldest, "too many connections at once");
          pending_.erase(oldest);
        }
      }
      return;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    const auto incoming = std::count_if(pending_.begin(), pending_.end(), [](auto& c) { return !c.outgoing; });
    if (static_cast<std::size_t>(incoming) >= kMaxPending) {
      auto oldest = std::find_if(pending_.begin(), pending_.end(), [](auto& c) { return !c.outgoing; });
      drop(*oldest, "too many unanswered connections at once");
      pending_.erase(oldest);
    }
    Connection c;
    c.fd = std::move(accepted);
    c.challenge = hs::make_challenge();
    c.out = c.challenge;
    c.want = hs::kReplyBytes;
    c.expires = Clock::now() + handshake_timeout_;
    c.from = peer_address(fd);
    pending_.push_back(std::move(c));
  }
}

bool MeshWiring::step(Connection& c) {
  while (true) {
    const std::string lost = pump(c.fd.get(), c.out, c.in, c.want);
    if (!lost.empty()) {
      if (!c.outgoing) return drop(c, lost), false;
      c.fd.reset();
      c.reconnect = true;
      return false;
    }
    if (c.in.size() < c.want) return true;
    if (!c.outgoing) return finish_incoming(c);
    if (!c.replied) {
      c.out = hs::make_reply(secret_, c.in, rank_, c.peer);
      c.replied = true;
      c.want += 1;  // the acceptance
      continue;
    }
    if (c.in.back() != hs::kAccepted) {
      throw Error(Error::Code::Io, "direct mesh: " + peers_[c.peer].name + " answered the handshake wrongly");
    }
    fds_[c.peer] = std::move(c.fd);
    return false;
  }
}

bool MeshWiring::finish_incoming(Connection& c) {
  const auto claimed = hs::verify_reply(secret_, c.challenge, c.in, rank_, static_cast<int>(peers_.size()));
  if (!claimed) return drop(c, "bad authentication"), false;
  if (fds_[*claimed]) return drop(c, "rank " + std::to_string(*claimed) + " is already connected"), false;
  const char accepted = hs::kAccepted;
  if (::send(c.fd.get(), &accepted, 1, MSG_NOSIGNAL | MSG_DONTWAIT) != 1) {
    return drop(c, "closed before the handshake ended"), false;
  }
  fds_[*claimed] = std::move(c.fd);
  return false;
}

void MeshWiring::drop(Connection& c, const std::string& why) {
  if (++rejected_ <= 3) {
    log_("trainrun: rank " + std::to_string(rank_) + ": direct mesh: rejected a connection from " + c.from + ": " +
         why);
  }
  c.fd.reset();
}

void MeshWiring::forget_finished() {
  pending_.erase(std::remove_if(pending_.begin(), pending_.end(), [](const Connection& c) { return !c.fd; }),
                 pending_.end());
}

bool MeshWiring::complete() const {
  for (std::size_t peer = 0; peer < fds_.size(); ++peer) {
    if (!fds_[peer] && static_cast<int>(peer) != rank_) return false;
  }
  return true;
}

void MeshWiring::fail_timeout() const {
  std::string missing;
  int count = 0;
  for (std::size_t peer = 0; peer < fds_.size(); ++peer) {
    if (fds_[peer] || static_cast<int>(peer) == rank_) continue;
    if (++count <= 8) missing += (count > 1 ? ", " : "") + peers_[peer].name;
  }
  if (count > 8) missing += " and " + std::to_string(count - 8) + " more";
  throw Error(Error::Code::Timeout,
              "direct mesh: no authenticated connection with " + missing + " before the start timeout");
}

// Connects again to the peers whose retry is due; returns when the next is.
MeshWiring::Clock::time_point MeshWiring::start_due_retries(Clock::time_point deadline) {
  const auto now = Clock::now();
  const auto split =
      std::stable_partition(retries_.begin(), retries_.end(), [&](const Retry& r) { return r.at > now; });
  const std::vector<Retry> due(split, retries_.end());
  retries_.erase(split, retries_.end());
  for (const Retry& r : due) start_outgoing(r.peer, deadline, r.pause);
  Clock::time_point next = Clock::time_point::max();
  for (const Retry& r : retries_) next = std::min(next, r.at);
  return next;
}

std::vector<UniqueFd> MeshWiring::run(Clock::time_point deadline, const std::function<void()>& check) {
  for (int peer = 0; peer < rank_; ++peer) start_outgoing(peer, deadline);
  std::vector<pollfd> pfds;
  auto checked = Clock::now();
  while (!complete()) {
    const auto now = Clock::now();
    if (now >= deadline) fail_timeout();
    if (check && now - checked >= kCheckInterval) check(), checked = now;
    auto wake = std::min(check ? std::min(deadline, now + kCheckInterval) : deadline, start_due_retries(deadline));
    for (Connection& c : pending_) {
      if (c.outgoing) continue;
      if (c.expires <= now) drop(c, "no answer within " + std::to_string(handshake_timeout_.count()) + " ms");
      else wake = std::min(wake, c.expires);
    }
    forget_finished();
    pfds.clear();
    pfds.push_back({listener_, POLLIN, 0});
    for (const Connection& c : pending_) {
      pfds.push_back({c.fd.get(), static_cast<short>(POLLIN | (c.out.empty() ? 0 : POLLOUT)), 0});
    }
    if (::poll(pfds.data(), pfds.size(), net::milliseconds_until(wake)) < 0 && errno != EINTR) {
      throw Error(Error::Code::Io, "direct mesh: poll: " + net::errno_text(errno));
    }
    std::vector<int> reconnect;
    const std::size_t polled = pending_.size();
    for (std::size_t i = 0; i < polled; ++i) {
      Connection& c = pending_[i];
      if (pfds[i + 1].revents == 0 || step(c)) continue;
      if (c.reconnect) reconnect.push_back(c.peer);  // finished otherwise: fd in fds_ or closed
    }
    forget_finished();
    if (pfds[0].revents != 0) accept_incoming();
    for (int peer : reconnect) start_outgoing(peer, deadline);
  }
  if (rejected_ > 3) {
    log_("trainrun: rank " + std::to_string(rank_) + ": direct mesh: rejected " + std::to_string(rejected_) +
         " connections in all");
  }
  return std::move(fds_);
}

}  // namespace trainrun::detail
