// MeshWiring: connects one rank of the direct mesh to every peer. Lower
// ranks accept, higher ranks connect; every connection, in both directions,
// is driven by one poll loop, so a slow peer delays only itself. The
// listening port is public, so anything may connect to it: a connection
// that sends a bad answer, none in time, or closes is dropped with one line
// on stderr and the rank keeps accepting; it never fails the job. A
// connector whose connection was dropped before it was accepted (e.g. evicted
// among a flood of strangers) connects again. A peer whose host cannot be
// reached for the moment (EHOSTUNREACH, ENETUNREACH: at 32 hosts, neighbour
// resolution still under way) is tried again, kRetryFirst apart and
// doubling up to kRetryMost, until the deadline, while the loop serves the
// other connections and `check` (an elastic job's newer generation ends the
// wait); any other refusal (ECONNREFUSED: the peer's process is gone) fails
// at once. Not thread-safe; one use.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "rendezvous/auth.h"
#include "os/unique_fd.h"

namespace trainrun::detail {

class MeshWiring {
 public:
  using Clock = std::chrono::steady_clock;
  struct Peer {
    std::string host, port;
    std::string name;  // "rank 3 (10.0.0.2:4711)", for messages
  };
  // How long one unproven incoming connection may take to answer, and how
  // many may wait at once (the oldest is dropped past that).
  static constexpr std::chrono::milliseconds kHandshakeTimeout{10'000};
  static constexpr std::size_t kMaxPending = 64;
  static constexpr std::chrono::milliseconds kRetryFirst{20};
  static constexpr std::chrono::milliseconds kRetryMost{1000};

  // Receives each line about a rejected connection (default: stderr).
  using Log = std::function<void(const std::string&)>;

  MeshWiring(int rank, const rendezvous::Secret& secret, int listener, std::vector<Peer> peers, Log log = nullptr,
             std::chrono::milliseconds handshake_timeout = kHandshakeTimeout);
  // Returns one connected, authenticated, non-blocking fd per rank (-1 for
  // this rank). Throws Error(Timeout) naming the missing ranks at `deadline`.
  // `check`, when given, runs every kCheckInterval while peers are awaited;
  // what it throws ends the wiring.
  std::vector<UniqueFd> run(Clock::time_point deadline, const std::function<void()>& check = nullptr);
  static constexpr std::chrono::milliseconds kCheckInterval{200};
  ~MeshWiring();

 private:
  struct Connection;
  struct Retry {
    int peer;
    Clock::time_point at;
    std::chrono::milliseconds pause;  // before the one after
  };
  void start_outgoing(int peer, Clock::time_point deadline, std::chrono::milliseconds pause = kRetryFirst);
  Clock::time_point start_due_retries(Clock::time_point deadline);
  void accept_incoming();
  bool step(Connection& c);  // false: the connection is finished or dropped
  bool finish_incoming(Connection& c);
  void drop(Connection& c, const std::string& why);
  void forget_finished();
  bool complete() const;
  [[noreturn]] void fail_timeout() const;

  const int rank_;
  const rendezvous::Secret secret_;
  const int listener_;
  const std::vector<Peer> peers_;
  const Log log_;
  const std::chrono::milliseconds handshake_timeout_;
  std::vector<UniqueFd> fds_;
  std::vector<Connection> pending_;
  std::vector<Retry> retries_;
  int rejected_ = 0;
};

}  // namespace trainrun::detail
