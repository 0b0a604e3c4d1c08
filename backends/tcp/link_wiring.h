// LinkWiring: the handshakes of one rank's links (peer_links.h runs it on
// a thread of its own): the dials it is asked for and whatever connects to
// its listening port, all driven by one poll loop, so a slow or silent
// peer delays only its own link. The port is public, so anything may
// connect to it: a connection that sends a bad answer, none in time, or
// closes is dropped with one line on stderr (the first three, then a
// count) and never fails the job; at most max_pending() unproven ones wait
// at once (the oldest is dropped past that). A dial whose connection is
// lost before the verdict (e.g. evicted among a flood of strangers) dials
// again. A peer whose host cannot be reached for the moment (EHOSTUNREACH,
// ENETUNREACH: at 32 hosts, neighbour resolution still under way) is tried
// again, kRetryFirst apart and doubling up to kRetryMost, until the dial's
// deadline; any other refusal (ECONNREFUSED: the peer's process is gone, or
// it aborted) fails the link at once. Both ranks of a pair may dial each
// other at the same moment: mesh_handshake::keeps_dial makes one
// connection the link on both sides, and a dialler told kOtherWay waits
// for the peer's dial, dialling again now and then so that a peer that
// died meanwhile is found (refused) rather than waited for. Not
// thread-safe; connects without blocking (connect(2) in progress is
// polled like the rest).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "backends/tcp/mesh_handshake.h"
#include "os/unique_fd.h"
#include "rendezvous/auth.h"
#include "trainrun/error.h"

namespace trainrun::detail {

class LinkWiring {
 public:
  using Clock = std::chrono::steady_clock;
  using Channel = mesh_handshake::Channel;
  struct Peer {
    std::string host, port;
    std::string name;  // "rank 3 (10.0.0.2:4711)", for messages
  };
  struct Up {
    Channel channel;
    int peer;
    UniqueFd fd;  // connected, authenticated, non-blocking, TCP_NODELAY
  };
  struct Failed {
    Channel channel;
    int peer;
    Error::Code code;
    std::string message;  // names the peer
  };
  struct Events {
    std::vector<Up> up;
    std::vector<Failed> failed;
  };
  // How long one unproven incoming connection may take to answer.
  static constexpr std::chrono::milliseconds kHandshakeTimeout{10'000};
  static constexpr std::size_t kMaxPending = 64;
  static constexpr std::chrono::milliseconds kRetryFirst{20};
  static constexpr std::chrono::milliseconds kRetryMost{1000};
  // How many unproven incoming connections may wait at once in a world of
  // `size`: strangers may take kMaxPending, and every peer may dial both
  // channels at once (an alltoall's first call) without being evicted.
  static std::size_t max_pending(int size) { return kMaxPending + 2 * static_cast<std::size_t>(size); }

  // Receives each line about a rejected connection (default: stderr).
  using Log = std::function<void(const std::string&)>;

  // `listener`: a non-blocking listening socket, borrowed.
  LinkWiring(int rank, int size, const rendezvous::Secret& secret, int listener, Log log = nullptr,
             std::chrono::milliseconds handshake_timeout = kHandshakeTimeout);
  ~LinkWiring();  // says how many connections it rejected, past the three it named
  LinkWiring(const LinkWiring&) = delete;
  LinkWiring& operator=(const LinkWiring&) = delete;

  // The peers' addresses, by rank; before the first dial.
  void set_peers(std::vector<Peer> peers);
  // Starts making the link of `channel` to `peer` unless one is up, in the
  // making or failed; past `deadline` it fails (Error::Code::Timeout).
  void dial(Channel channel, int peer, Clock::time_point deadline);
  // Waits until `until`, until `wake` (-1: none; not read here) is
  // readable, or until a handshake can move, then moves every one that
  // can; appends the links that came up and the dials that failed.
  void poll(int wake, Clock::time_point until, Events& events);

 private:
  enum class State { kIdle, kDialing, kAwaiting, kUp, kFailed };
  struct Link {
    State state = State::kIdle;
    Clock::time_point started, deadline;
    Clock::time_point retry_at = Clock::time_point::max();
    std::chrono::milliseconds pause = kRetryFirst;  // before the retry after the next
  };
  struct Connection;
  struct Key {
    Channel channel;
    int peer;
  };
  Link& link(Channel channel, int peer) { return links_[static_cast<std::size_t>(channel) * size_ + peer]; }
  void start_outgoing(Channel channel, int peer);
  void retry_later(Channel channel, int peer, std::chrono::milliseconds pause);
  void dial_failed(Channel channel, int peer, int error);
  void fail(Channel channel, int peer, Error::Code code, const std::string& message);
  void up(Channel channel, int peer, UniqueFd fd);
  Clock::time_point start_due(Clock::time_point now);
  void accept_incoming();
  bool step(Connection& c);  // false: the connection is finished or dropped
  bool step_outgoing(Connection& c);
  bool finish_incoming(Connection& c);
  bool verdict(Connection& c);
  void drop(Connection& c, const std::string& why);
  void drop_oldest_stranger(const std::string& why);
  void forget_finished();

  const int rank_, size_;
  const rendezvous::Secret secret_;
  const int listener_;
  const Log log_;
  const std::chrono::milliseconds handshake_timeout_;
  std::vector<Peer> peers_;
  std::vector<Link> links_;                    // by channel, then peer
  std::vector<Key> active_;                    // links dialling or awaiting the peer's dial
  std::vector<Connection> pending_;            // in their handshake, both ways
  Clock::time_point listener_paused_until_{};  // out of descriptors with no stranger to drop
  Events events_;                              // since the last poll() handed them on
  int rejected_ = 0;
};

}  // namespace trainrun::detail
