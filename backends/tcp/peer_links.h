// PeerLinks: one rank's TCP links to its peers, each made when it is first
// needed (as NCCL connects at first use), so that a rank holds links only
// to the peers it talks to: an allreduce-only job of N ranks keeps
// O(log N) of them per rank (recursive doubling's partners), an alltoall
// makes the N-1. A link is one authenticated connection (mesh_handshake.h)
// per pair of ranks and channel: the collectives' mesh (socket_mesh.h) and
// point-to-point (p2p_channel.h) never share one. One listening port per
// communicator, published once in the rendezvous, serves both.
//
// A thread of its own runs every handshake (link_wiring.h): it accepts
// and answers the peers' dials and drives the dials that callers ask for.
// So a rank blocked anywhere (in a collective on another link, in a
// shared-memory round, in recv, in the user's code between calls) still
// lets a peer make the link it needs, and "both send first" cannot
// deadlock on a link nobody accepts. (A listener polled only inside the
// mesh's transfers would not be served during those waits.)
//
// Thread-safe. A link's descriptor, once up, stays open and its number
// valid until the destructor, so users keep it as a plain int; abort()
// shuts them all down. Owns the listening socket and the thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backends/tcp/link_wiring.h"
#include "backends/tcp/mesh_handshake.h"
#include "os/unique_fd.h"
#include "rendezvous/auth.h"
#include "trainrun/error.h"

namespace trainrun::detail {

class PeerLinks {
 public:
  using Clock = std::chrono::steady_clock;
  using Channel = mesh_handshake::Channel;
  struct Options {
    int rank = 0, size = 1;
    rendezvous::Secret secret{};
    std::vector<int> names;                     // job rank of each rank, for messages (empty: the same)
    std::chrono::milliseconds dial_timeout{0};  // a link not made by then fails (the collective timeout)
    LinkWiring::Log log;                        // rejected connections (default: stderr)
    std::chrono::milliseconds handshake_timeout = LinkWiring::kHandshakeTimeout;
  };
  // Listens on `address` (numeric; the kernel picks the port) and starts
  // answering dials at once: peers may dial as soon as published() is out.
  PeerLinks(Options options, const std::string& address);
  ~PeerLinks();
  PeerLinks(const PeerLinks&) = delete;
  PeerLinks& operator=(const PeerLinks&) = delete;

  // "address port": what this rank publishes for its peers.
  const std::string& published() const { return published_; }
  // Every rank's published string, by rank; dials start from then on.
  void set_addresses(const std::vector<std::string>& published);
  int rank() const { return rank_; }
  int size() const { return size_; }
  // "rank 3 (10.0.0.2:4711)"; the job's rank number for a process set.
  std::string peer_name(int peer) const;

  // The link's descriptor when it is up; else asks for it (once) and
  // returns -1. Throws the link's failure (Error, naming the peer) and
  // Error(Io) after abort().
  int find(Channel channel, int peer);
  // As find(), but waits for the link until `until` (-1 then).
  int wait(Channel channel, int peer, Clock::time_point until);
  // Called on the links' thread for every link of `channel` that comes up
  // (its descriptor) or fails (-1), and at once for those already up. An
  // empty watcher: no more calls once watch() returns.
  using Watcher = std::function<void(int peer, int fd)>;
  void watch(Channel channel, Watcher watcher);
  // How many links of `channel` are up (what a rank holds).
  int links_up(Channel channel) const;
  // Shuts every link down and stops listening (a later dial is refused,
  // which fails it at once); wakes every wait. From any thread.
  void abort() noexcept;

 private:
  struct Slot {
    int fd = -1;
    bool asked = false;
    bool failed = false;
    Error::Code code = Error::Code::Io;
    std::string failure;
  };
  Slot& slot(Channel channel, int peer) { return slots_[static_cast<std::size_t>(channel) * size_ + peer]; }
  int ready(Channel channel, int peer);  // find() under the lock
  std::string name_locked(int peer) const;
  void wake() noexcept;
  void run();
  void publish(LinkWiring::Events& events);

  const int rank_, size_;
  const rendezvous::Secret secret_;
  const std::vector<int> names_;
  const std::chrono::milliseconds dial_timeout_;
  const LinkWiring::Log log_;
  const std::chrono::milliseconds handshake_timeout_;
  UniqueFd listener_;  // the thread's; closed when it stops
  UniqueFd wake_;      // eventfd: asks, addresses, abort
  std::string published_;

  mutable std::mutex mutex_;  // guards everything below
  std::condition_variable changed_;
  std::vector<std::string> addresses_;   // "host:port" by rank, for messages
  std::vector<LinkWiring::Peer> peers_;  // for the thread, once known
  bool peers_known_ = false;
  std::vector<Slot> slots_;  // by channel, then peer
  std::vector<std::pair<Channel, int>> asks_;
  std::vector<UniqueFd> owned_;  // every link that came up
  bool aborted_ = false, stopping_ = false;

  std::mutex watch_mutex_;  // held while a watcher runs
  Watcher watchers_[mesh_handshake::kChannels];
  std::thread thread_;
};

}  // namespace trainrun::detail
