// SocketMesh: one plain TCP connection to every peer, driven entirely by
// the calling thread. Gloo's TCP transport hands every message from its
// device thread to the caller through a futex, which costs 0.2-3 ms per
// small collective on a busy machine; here the kernel wakes the caller
// directly when bytes arrive. Connections are authenticated with the job
// secret (challenge-response), so a stray connection is never taken for a
// peer. Not thread-safe: one caller at a time; abort() may come from any
// thread and makes blocked calls fail.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rendezvous/auth.h"
#include "os/unique_fd.h"

namespace trainrun::detail {

class SocketMesh {
 public:
  SocketMesh(int rank, int size, const rendezvous::Secret& secret, std::chrono::milliseconds timeout);
  ~SocketMesh();
  SocketMesh(const SocketMesh&) = delete;
  SocketMesh& operator=(const SocketMesh&) = delete;

  // Listens on `address` (the kernel picks the port); returns what this rank
  // publishes for its peers.
  std::string listen(const std::string& address);
  // Connects to every peer, given every rank's published string by rank.
  // Lower ranks accept, higher ranks connect and answer a challenge.
  // `check` (may be empty) runs now and then while peers are awaited and may
  // throw to give up (BackendContext::forming_check).
  void connect(const std::vector<std::string>& published, std::chrono::milliseconds timeout,
               const std::function<void()>& check = nullptr);

  // Names rank r "rank names[r]" in messages (a process set's mesh names
  // the job's ranks); empty: by its own number.
  void name_ranks(std::vector<int> names) { names_ = std::move(names); }

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
  // A mesh of the given ranks (this rank among them) over this
  // mesh's connections, numbered by position in `ranks`; it does not own
  // them and must not outlive this mesh. Error messages name world ranks;
  // its waits warn through this mesh's set_wait_warning (set it first),
  // with the peer as this mesh numbers it.
  std::unique_ptr<SocketMesh> subset(const std::vector<int>& ranks) const;
  // Throws Error(Io) naming `peer` when its connection has closed (the
  // process exited or aborted); for transports that wait elsewhere.
  void check_alive(int peer) const;

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
  std::string peer_name(int peer) const;
  // exchange() and stream(): until recv_needed bytes arrived and, with
  // send_all, every ready byte went out.
  void transfer(int to, const void* send, std::size_t send_ready, std::size_t& sent, bool send_all, int from,
                void* recv, std::size_t recv_bytes, std::size_t recv_needed, std::size_t& received);

  const int rank_;
  const int size_;
  const rendezvous::Secret secret_;
  const std::chrono::milliseconds timeout_;
  UniqueFd listener_;                   // until connect() is done
  std::vector<UniqueFd> owned_;         // the connections by rank; empty for a subset()
  std::vector<int> fds_;                // by rank; -1 for this rank (owned_'s, or the parent mesh's)
  std::vector<std::string> addresses_;  // by rank, for error messages
  std::vector<int> names_;              // world rank of each rank, for messages
  std::atomic<bool> aborted_{false};
  std::chrono::milliseconds warn_interval_{0};
  WaitWarning warn_;
  std::chrono::nanoseconds spin_{0};
};

}  // namespace trainrun::detail
