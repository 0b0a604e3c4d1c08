// P2PChannel: point-to-point messages (Backend::send / recv) over links of
// their own (peer_links.h, channel kP2P: one authenticated TCP connection
// per pair, made at the pair's first send or recv, on either side), so p2p
// bytes never mix with a collective's. A reader thread (from the first
// link on) drains every link as bytes arrive into per-(peer, tag) queues,
// so a send never waits for its receiver to call recv: two ranks may both
// send a large message before either receives, and a rank busy elsewhere
// still takes what is sent to it (the links' thread accepts the link).
// Messages between a pair with one tag arrive in send order. Thread-safe:
// sends and receives may come from any threads at once (one send per peer
// at a time on the wire). A closed link, or one that could not be made
// (the peer is gone), fails the waits on that peer; abort() fails every
// wait.
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

#include "backends/tcp/peer_links.h"
#include "os/unique_fd.h"
#include "trainrun/types.h"

namespace trainrun::detail {

class P2PChannel {
 public:
  struct Options {
    int rank = 0, size = 1;
    std::vector<int> names;                // job rank of each rank, for messages (empty: the same)
    std::chrono::milliseconds timeout{0};  // a wait without progress
  };
  P2PChannel(const Options& options, std::shared_ptr<PeerLinks> links);
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
  void linked(int peer, int fd);  // the links' watcher: a link is up (fd) or failed (-1)
  int link_to(int peer);          // for a send: waits for the link
  void read_loop();
  bool read_some(int peer, int fd);  // false: the connection closed
  std::string name(int rank) const;
  std::string peer_name(int peer) const { return links_->peer_name(peer); }

  const int rank_, size_;
  const std::vector<int> names_;
  const std::chrono::milliseconds timeout_;
  const std::shared_ptr<PeerLinks> links_;
  std::vector<std::unique_ptr<Peer>> peers_;
  UniqueFd wake_;     // eventfd: a new link, or abort(), for the reader
  std::mutex mutex_;  // guards every Peer's fd, inbox and `closed`, aborted_ and reader_
  std::condition_variable arrived_;
  bool aborted_ = false;
  int first_closed_ = -1;  // the first peer whose connection closed
  std::thread reader_;     // from the first link on
};

}  // namespace trainrun::detail
