#include "backends/tcp/link_wiring.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "os/net.h"

namespace trainrun::detail {
namespace hs = mesh_handshake;

// One connection in its handshake. Outgoing: connect, read the challenge,
// send the reply, read the verdict. Incoming: send the challenge, read the
// reply, send the verdict.
struct LinkWiring::Connection {
  UniqueFd fd;
  bool outgoing = false;
  Channel channel = Channel::kMesh;  // outgoing: the link it dials
  int peer = -1;                     // outgoing
  bool connecting = false;           // outgoing: connect(2) still in progress
  bool replied = false;              // outgoing: the reply is queued
  std::string challenge;             // incoming: what this rank sent
  std::string in, out;               // received so far; still to send
  std::size_t want = 0;              // bytes to receive in all at this step
  Clock::time_point expires;         // incoming
  std::string from;                  // incoming: "ADDR:PORT"
};

namespace {

// A dialler told kOtherWay dials again after this (doubling up to
// kRetryMost): the peer's own dial normally lands long before, and the
// next one only finds a peer that died meanwhile.
constexpr std::chrono::milliseconds kOtherWayPause{200};

std::string peer_address(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return "an unknown address";
  char host[INET6_ADDRSTRLEN] = "?";
  if (address.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&address);
    ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
    return "[" + std::string(host) + "]:" + std::to_string(ntohs(a->sin6_port));
  }
  const auto* a = reinterpret_cast<const sockaddr_in*>(&address);
  ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
  return std::string(host) + ":" + std::to_string(ntohs(a->sin_port));
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

// A non-blocking connect to a published (numeric) address, done or in
// progress; none, with *error, when it failed at once.
UniqueFd start_connect(const std::string& host, const std::string& port, int* error) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  addrinfo* result = nullptr;
  if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &result) != 0 || !result) {
    *error = EINVAL;
    return UniqueFd();
  }
  UniqueFd fd(::socket(result->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) {
    *error = errno;
  } else if (::connect(fd.get(), result->ai_addr, result->ai_addrlen) != 0 && errno != EINPROGRESS) {
    *error = errno;
    fd.reset();
  }
  ::freeaddrinfo(result);
  return fd;
}

// A host that cannot be reached for now may be reachable soon; a refusal
// means nobody listens there any more.
bool retryable(int error) { return error == EHOSTUNREACH || error == ENETUNREACH || error == ETIMEDOUT; }

}  // namespace

LinkWiring::LinkWiring(int rank, int size, const rendezvous::Secret& secret, int listener, Log log,
                       std::chrono::milliseconds handshake_timeout)
    : rank_(rank), size_(size), secret_(secret), listener_(listener),
      log_(log ? std::move(log) : [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); }),
      handshake_timeout_(handshake_timeout), links_(static_cast<std::size_t>(mesh_handshake::kChannels) * size) {}

LinkWiring::~LinkWiring() {
  if (rejected_ > 3) {
    log_("trainrun: rank " + std::to_string(rank_) + ": direct mesh: rejected " + std::to_string(rejected_) +
         " connections in all");
  }
}

void LinkWiring::set_peers(std::vector<Peer> peers) { peers_ = std::move(peers); }

void LinkWiring::dial(Channel channel, int peer, Clock::time_point deadline) {
  Link& l = link(channel, peer);
  if (l.state != State::kIdle) return;
  l.state = State::kDialing;
  l.started = Clock::now();
  l.deadline = deadline;
  active_.push_back({channel, peer});
  start_outgoing(channel, peer);
}

void LinkWiring::start_outgoing(Channel channel, int peer) {
  int error = 0;
  UniqueFd fd = start_connect(peers_[peer].host, peers_[peer].port, &error);
  if (!fd) return dial_failed(channel, peer, error);
  Connection c;
  c.fd = std::move(fd);
  c.outgoing = true;
  c.channel = channel;
  c.peer = peer;
  c.connecting = true;
  c.want = hs::kChallengeBytes;
  pending_.push_back(std::move(c));
}

void LinkWiring::retry_later(Channel channel, int peer, std::chrono::milliseconds pause) {
  Link& l = link(channel, peer);
  l.retry_at = Clock::now() + pause;
  l.pause = std::min(2 * pause, kRetryMost);
}

void LinkWiring::dial_failed(Channel channel, int peer, int error) {
  Link& l = link(channel, peer);
  if (l.state != State::kDialing) return;
  if (retryable(error) && Clock::now() + l.pause < l.deadline) return retry_later(channel, peer, l.pause);
  fail(channel, peer, Error::Code::Io,
       "cannot connect to " + peers_[peer].name + ": " + net::errno_text(error) +
           (l.pause > kRetryFirst ? " (tried again until the collective timeout)" : ""));
}

void LinkWiring::fail(Channel channel, int peer, Error::Code code, const std::string& message) {
  Link& l = link(channel, peer);
  l.state = State::kFailed;
  l.retry_at = Clock::time_point::max();
  active_.erase(std::remove_if(active_.begin(), active_.end(),
                               [&](const Key& k) { return k.channel == channel && k.peer == peer; }),
                active_.end());
  for (Connection& c : pending_) {
    if (c.outgoing && c.channel == channel && c.peer == peer) c.fd.reset();
  }
  events_.failed.push_back({channel, peer, code, message});
}

void LinkWiring::up(Channel channel, int peer, UniqueFd fd) {
  Link& l = link(channel, peer);
  l.state = State::kUp;
  l.retry_at = Clock::time_point::max();
  active_.erase(std::remove_if(active_.begin(), active_.end(),
                               [&](const Key& k) { return k.channel == channel && k.peer == peer; }),
                active_.end());
  // A dial of ours still in flight is let finish: the peer answers it
  // kOtherWay, where closing it now would look like a stranger there.
  events_.up.push_back({channel, peer, std::move(fd)});
}

// Dials again where a retry is due, fails dials past their deadline;
// returns when the next of either is.
LinkWiring::Clock::time_point LinkWiring::start_due(Clock::time_point now) {
  const std::vector<Key> active = active_;
  for (const Key& k : active) {
    Link& l = link(k.channel, k.peer);
    if (l.deadline <= now) {
      fail(k.channel, k.peer, Error::Code::Timeout,
           "no authenticated connection with " + peers_[k.peer].name + " within " +
               std::to_string(std::chrono::round<std::chrono::seconds>(l.deadline - l.started).count()) + " s");
    } else if (l.retry_at <= now) {
      l.retry_at = Clock::time_point::max();
      l.state = State::kDialing;
      start_outgoing(k.channel, k.peer);
    }
  }
  Clock::time_point next = Clock::time_point::max();
  for (const Key& k : active_) {
    const Link& l = link(k.channel, k.peer);
    next = std::min({next, l.deadline, l.retry_at});
  }
  return next;
}

void LinkWiring::drop_oldest_stranger(const std::string& why) {
  auto oldest = std::find_if(pending_.begin(), pending_.end(), [](auto& c) { return !c.outgoing && c.fd; });
  if (oldest == pending_.end()) return;
  drop(*oldest, why);
  pending_.erase(oldest);
}

void LinkWiring::accept_incoming() {
  while (true) {
    UniqueFd accepted(::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    const int fd = accepted.get();
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE) {
        // Out of descriptors: make room by dropping the oldest stranger,
        // or stop accepting a while (the listener would stay readable).
        const std::size_t before = pending_.size();
        drop_oldest_stranger("too many connections at once");
        if (pending_.size() == before) listener_paused_until_ = Clock::now() + std::chrono::milliseconds(100);
      }
      return;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    const auto incoming = std::count_if(pending_.begin(), pending_.end(), [](auto& c) { return !c.outgoing; });
    if (static_cast<std::size_t>(incoming) >= max_pending(size_)) {
      drop_oldest_stranger("too many unanswered connections at once");
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

bool LinkWiring::step_outgoing(Connection& c) {
  int error = 0;
  socklen_t length = sizeof error;
  if (::getsockopt(c.fd.get(), SOL_SOCKET, SO_ERROR, &error, &length) != 0) error = errno;
  if (error != 0) {
    c.fd.reset();
    dial_failed(c.channel, c.peer, error);
    return false;
  }
  c.connecting = false;
  const int one = 1;
  ::setsockopt(c.fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return true;
}

bool LinkWiring::step(Connection& c) {
  if (c.connecting && !step_outgoing(c)) return false;
  while (true) {
    const std::string lost = pump(c.fd.get(), c.out, c.in, c.want);
    if (!lost.empty()) {
      if (!c.outgoing) return drop(c, lost), false;
      c.fd.reset();
      // Lost before the verdict (evicted among strangers, or the peer
      // died: the next dial is refused then).
      if (link(c.channel, c.peer).state == State::kDialing) retry_later(c.channel, c.peer, kRetryFirst);
      return false;
    }
    if (c.in.size() < c.want) return true;
    if (!c.outgoing) return finish_incoming(c);
    if (!c.replied) {
      c.out = hs::make_reply(secret_, c.in, rank_, c.peer, c.channel);
      c.replied = true;
      c.want += 1;  // the verdict
      continue;
    }
    return verdict(c);
  }
}

// What the peer answered this rank's dial.
bool LinkWiring::verdict(Connection& c) {
  const char answer = c.in.back();
  Link& l = link(c.channel, c.peer);
  if (answer == hs::kAccepted && l.state != State::kUp) {
    up(c.channel, c.peer, std::move(c.fd));
  } else if (answer == hs::kAccepted || answer == hs::kOtherWay) {
    c.fd.reset();
    // The peer's own dial is in flight (or already made the link here).
    if (answer == hs::kOtherWay && l.state == State::kDialing) {
      l.state = State::kAwaiting;
      retry_later(c.channel, c.peer, std::max(l.pause, kOtherWayPause));
    }
  } else {
    c.fd.reset();
    fail(c.channel, c.peer, Error::Code::Io, peers_[c.peer].name + " answered the handshake wrongly");
  }
  return false;
}

bool LinkWiring::finish_incoming(Connection& c) {
  const auto claim = hs::verify_reply(secret_, c.challenge, c.in, rank_, size_);
  if (!claim) return drop(c, "bad authentication"), false;
  const Link& l = link(claim->channel, claim->rank);
  const bool keep = l.state != State::kUp && hs::keeps_dial(rank_, claim->rank, l.state == State::kDialing);
  const char answer = keep ? hs::kAccepted : hs::kOtherWay;
  if (::send(c.fd.get(), &answer, 1, MSG_NOSIGNAL | MSG_DONTWAIT) != 1) {
    return drop(c, "closed before the handshake ended"), false;
  }
  if (keep) up(claim->channel, claim->rank, std::move(c.fd));
  c.fd.reset();
  return false;
}

void LinkWiring::drop(Connection& c, const std::string& why) {
  if (++rejected_ <= 3) {
    log_("trainrun: rank " + std::to_string(rank_) + ": direct mesh: rejected a connection from " + c.from + ": " +
         why);
  }
  c.fd.reset();
}

void LinkWiring::forget_finished() {
  pending_.erase(std::remove_if(pending_.begin(), pending_.end(), [](const Connection& c) { return !c.fd; }),
                 pending_.end());
}

void LinkWiring::poll(int wake, Clock::time_point until, Events& events) {
  const auto now = Clock::now();
  auto wake_at = std::min(until, start_due(now));
  for (Connection& c : pending_) {
    if (c.outgoing || !c.fd) continue;
    if (c.expires <= now) drop(c, "no answer within " + std::to_string(handshake_timeout_.count()) + " ms");
    else wake_at = std::min(wake_at, c.expires);
  }
  forget_finished();
  if (!events_.up.empty() || !events_.failed.empty()) wake_at = now;  // news already: do not sleep on it
  std::vector<pollfd> pfds;
  const bool listening = now >= listener_paused_until_;
  if (!listening) wake_at = std::min(wake_at, listener_paused_until_);
  pfds.push_back({listening ? listener_ : -1, POLLIN, 0});
  pfds.push_back({wake, POLLIN, 0});  // poll skips a negative descriptor
  for (const Connection& c : pending_) {
    const bool sends = c.connecting || !c.out.empty();
    pfds.push_back({c.fd.get(), static_cast<short>(POLLIN | (sends ? POLLOUT : 0)), 0});
  }
  if (::poll(pfds.data(), pfds.size(), net::milliseconds_until(wake_at)) < 0 && errno != EINTR) {
    throw Error(Error::Code::Io, "direct mesh: poll: " + net::errno_text(errno));
  }
  const std::size_t polled = pending_.size();
  for (std::size_t i = 0; i < polled; ++i) {
    Connection& c = pending_[i];
    if (c.fd && pfds[i + 2].revents != 0) step(c);
  }
  forget_finished();
  if (pfds[0].revents != 0) accept_incoming();
  for (Up& u : events_.up) events.up.push_back(std::move(u));
  for (Failed& f : events_.failed) events.failed.push_back(std::move(f));
  events_ = Events();
}

}  // namespace trainrun::detail
