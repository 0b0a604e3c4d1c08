// SocketMesh: the collectives' TCP links to the peers, driven entirely by
// the calling thread. Gloo's TCP transport hands every message from its
// device thread to the caller through a futex, which costs 0.2-3 ms per
// small collective on a busy machine; here the kernel wakes the caller
// directly when bytes arrive. A link is made the first time a transfer
// needs that peer (peer_links.h: authenticated with the job secret, made
// on the links' own thread), so a rank holds links only to the peers its
// algorithms talk to. Not thread-safe: one caller at a time; abort() may
// come from any thread and makes blocked calls fail.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backends/tcp/peer_links.h"

namespace trainrun::detail {

class SocketMesh {
 public:
  // The mesh of every rank over `links` (their kMesh channel); a wait
  // without progress fails after `timeout`.
  SocketMesh(std::shared_ptr<PeerLinks> links, std::chrono::milliseconds timeout);
  ~SocketMesh();
  SocketMesh(const SocketMesh&) = delete;
  SocketMesh& operator=(const SocketMesh&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  // Sends send_bytes to `to` while receiving exactly recv_bytes from `from`
  // (the same peer or another); either size may be zero. Throws
  // Error(Io/Timeout) naming the peer.
  void exchange(int to, const void* send, std::size_t send_bytes, int from, void* recv, std::size_t recv_bytes);
  void exchange(int peer, const void* send, std::size_t send_bytes, void* recv, std::size_t recv_bytes) {
    exchange(peer, send, send_bytes, peer, recv, recv_bytes);
  }
  // One step of a long two-way stream, for pipelines that do other work
  // between steps while the kernel keeps the link busy: sends from the
  // first `send_ready` bytes of `send` what the socket takes, and receives
  // into `recv` (at most recv_bytes in all) until `recv_needed` bytes have
  // arrived; `sent` and `received` carry the progress from step to step.
  // Waits (warning and timing out as exchange() does) only for the receive;
  // with recv_needed <= received it sends what goes without waiting.
  void stream(int to, const void* send, std::size_t send_ready, std::size_t& sent, int from, void* recv,
              std::size_t recv_bytes, std::size_t recv_needed, std::size_t& received) {
    transfer(to, send, send_ready, sent, false, from, recv, recv_bytes, recv_needed, received);
  }
  // As stream(), but also waits until the first send_ready bytes are sent.
  // Call it before a step that waits for other ranks (a shared-memory
  // round): the unsent bytes may be what those ranks' peers wait for, and
  // neither side would move again (two hosts' ranks each waiting in shared
  // memory for a local rank that waits for the other's bytes).
  void stream_flushed(int to, const void* send, std::size_t send_ready, std::size_t& sent, int from, void* recv,
                      std::size_t recv_bytes, std::size_t recv_needed, std::size_t& received) {
    transfer(to, send, send_ready, sent, true, from, recv, recv_bytes, recv_needed, received);
  }
  void abort() noexcept;
  // A mesh of the given ranks (this rank among them) over the same links,
  // numbered by position in `ranks`. Error messages name job ranks; its
  // waits warn through this mesh's set_wait_warning (set it first), with
  // the peer as this mesh numbers it.
  std::unique_ptr<SocketMesh> subset(const std::vector<int>& ranks) const;
  // Throws Error(Io) naming `peer` when its link has closed (the process
  // exited or aborted), or could not be made (refused: the process is
  // gone); for transports that wait elsewhere. Without a link yet, it asks
  // for one and returns: a later call knows.
  void check_alive(int peer);

  // warn(peer, waited) from the calling thread each `interval` (0: never)
  // that an exchange waits for `peer` without a byte moving; the exchange
  // goes on waiting (until the collective timeout).
  using WaitWarning = std::function<void(int peer, std::chrono::seconds waited)>;
  void set_wait_warning(std::chrono::milliseconds interval, WaitWarning warn) {
    warn_interval_ = interval;
    warn_ = std::move(warn);
  }
  // How long a transfer keeps trying the sockets before it sleeps in poll
  // (0: sleeps at once). Waking from poll costs a reschedule; between
  // hosts one small message is ~10 us, so it is most of the wait.
  void set_spin(std::chrono::nanoseconds spin) { spin_ = spin; }

 private:
  using Clock = std::chrono::steady_clock;
  SocketMesh(std::shared_ptr<PeerLinks> links, std::vector<int> ranks, int rank, std::chrono::milliseconds timeout);
  std::string peer_name(int peer) const { return links_->peer_name(ranks_[peer]); }
  // exchange() and stream(): until recv_needed bytes arrived and, with
  // send_all, every ready byte went out.
  void transfer(int to, const void* send, std::size_t send_ready, std::size_t& sent, bool send_all, int from,
                void* recv, std::size_t recv_bytes, std::size_t recv_needed, std::size_t& received);
  // Makes the links to `to` and `from` that are not up (-1: not needed).
  void connect_links(int to, int from);
  int await_link(int peer);

  const int rank_;
  const int size_;
  const std::shared_ptr<PeerLinks> links_;
  const std::vector<int> ranks_;  // the links' number of each rank of this mesh
  const std::chrono::milliseconds timeout_;
  std::vector<int> fds_;  // by rank, once its link is up; -1 before (and for this rank)
  std::atomic<bool> aborted_{false};
  std::chrono::milliseconds warn_interval_{0};
  WaitWarning warn_;
  std::chrono::nanoseconds spin_{0};
};

}  // namespace trainrun::detail
