// P2PChannel: point-to-point messages (Backend::send / recv) over TCP
// connections of their own, one per pair of ranks, wired through the
// rendezvous like the collective mesh (mesh_wiring.h, authenticated with
// the job secret), so p2p bytes never mix with a collective's. A reader
// thread drains every connection as bytes arrive into per-(peer, tag)
// queues, so a send never waits for its receiver to call recv: two ranks
// may both send a large message before either receives. Messages between a
// pair with one tag arrive in send order. Thread-safe: sends and receives
// may come from any threads at once (one send per peer at a time on the
// wire). A closed connection fails the waits on that peer; abort() fails
// every wait.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rendezvous/auth.h"
#include "os/unique_fd.h"
#include "trainrun/types.h"

namespace trainrun::rendezvous {
class Store;
}

namespace trainrun::detail {

class P2PChannel {
 public:
  struct Options {
    int rank = 0, size = 1;
    std::string address;                         // this host's address on the job's network
    std::string scope;                           // rendezvous scope; keys "p2p.<rank>"
    std::vector<int> names;                      // job rank of each rank, for messages (empty: the same)
    std::chrono::milliseconds timeout{0};        // a wait without progress
    std::chrono::milliseconds start_timeout{0};  // for the wiring
    std::function<void()> check;                 // BackendContext::forming_check
  };
  // Collective over every rank: listens, publishes, connects.
  P2PChannel(const Options& options, const rendezvous::Secret& secret, rendezvous::Store& store);
  ~P2PChannel();
  P2PChannel(const P2PChannel&) = delete;
  P2PChannel& operator=(const P2PChannel&) = delete;

  // Returns when `count` elements are handed to the kernel (the buffer may
  // be reused). Throws Error(Io/Timeout) naming the peer.
  void send(const void* buf, std::size_t count, DataType type, int peer, int tag);
  // Waits for a message with `tag` from `peer` (kAnySource: any rank) and
  // returns its sender. Error(Mismatch) naming both ranks when its size or
  // type differ from `count` and `type`; Error(Io) when the peer's
  // connection closed first (any source: all of them); Error(Timeout).
  int recv(void* buf, std::size_t count, DataType type, int peer, int tag);
  void abort() noexcept;

  static constexpr int kAnySource = -1;

 private:
  struct Message {
    int tag;
    DataType type;
    std::vector<char> bytes;
  };
  struct Peer;
  void read_loop();
  bool read_some(int peer);  // false: the connection closed
  std::string name(int rank) const;
  std::string peer_name(int peer) const;

  const int rank_, size_;
  const std::vector<int> names_;
  const std::chrono::milliseconds timeout_;
  std::vector<std::string> addresses_;
  std::vector<std::unique_ptr<Peer>> peers_;
  std::mutex mutex_;  // guards every Peer's inbox and `closed`, and aborted_
  std::condition_variable arrived_;
  bool aborted_ = false;
  int first_closed_ = -1;  // the first peer whose connection closed
  std::thread reader_;
};

}  // namespace trainrun::detail
