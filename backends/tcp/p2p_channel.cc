#include "backends/tcp/p2p_channel.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "backends/tcp/mesh_wiring.h"
#include "os/net.h"
#include "rendezvous/store.h"
#include "trainrun/error.h"

namespace trainrun::detail {
namespace {

using Clock = std::chrono::steady_clock;

// Each message: this header, then `bytes` bytes.
struct Header {
  std::int32_t tag;
  std::uint32_t type;
  std::uint64_t bytes;
};
static_assert(sizeof(Header) == 16);

std::string describe(std::size_t bytes, DataType type) {
  return std::to_string(bytes) + " bytes of " + to_string(type);
}

}  // namespace

struct P2PChannel::Peer {
  UniqueFd fd;
  std::mutex send_mutex;  // one message at a time on the wire
  // Reader thread only:
  Header header{};
  std::size_t header_got = 0;
  Message incoming;
  std::size_t body_got = 0;
  // Under P2PChannel::mutex_:
  std::deque<Message> inbox;
  bool closed = false;
};

P2PChannel::P2PChannel(const Options& options, const rendezvous::Secret& secret, rendezvous::Store& store)
    : rank_(options.rank), size_(options.size), names_(options.names), timeout_(options.timeout),
      addresses_(static_cast<std::size_t>(size_)) {
  for (int r = 0; r < size_; ++r) peers_.push_back(std::make_unique<Peer>());
  if (size_ == 1) return;
  std::uint16_t port = 0;
  UniqueFd listener = net::listen_tcp(options.address, &port, true);
  if (!listener) {
    throw Error(Error::Code::Io, "point-to-point: cannot listen on " + options.address + ": " + net::errno_text(errno));
  }
  store.set(options.scope, "p2p." + std::to_string(rank_), options.address + " " + std::to_string(port));
  const auto published =
      store.get_range(options.scope, "p2p.", 0, static_cast<std::uint64_t>(size_), options.start_timeout);
  std::vector<MeshWiring::Peer> wiring;
  for (int r = 0; r < size_; ++r) {
    const std::size_t space = published[r].rfind(' ');
    const std::string host = published[r].substr(0, space);
    const std::string peer_port = space == std::string::npos ? "" : published[r].substr(space + 1);
    addresses_[r] = host + ":" + peer_port;
    wiring.push_back({host, peer_port, peer_name(r)});
  }
  auto fds = MeshWiring(rank_, secret, listener.get(), std::move(wiring))
                 .run(Clock::now() + options.start_timeout, options.check);
  for (int r = 0; r < size_; ++r) peers_[r]->fd = std::move(fds[r]);
  reader_ = std::thread([this] { read_loop(); });
}

P2PChannel::~P2PChannel() {
  abort();
  if (reader_.joinable()) reader_.join();
}

std::string P2PChannel::name(int rank) const { return "rank " + std::to_string(names_.empty() ? rank : names_[rank]); }

std::string P2PChannel::peer_name(int peer) const { return name(peer) + " (" + addresses_[peer] + ")"; }

void P2PChannel::abort() noexcept {
  std::lock_guard lock(mutex_);
  aborted_ = true;
  for (auto& peer : peers_) {
    if (peer->fd) ::shutdown(peer->fd.get(), SHUT_RDWR);  // wakes the reader and every send
  }
  arrived_.notify_all();
}

void P2PChannel::send(const void* buf, std::size_t count, DataType type, int peer, int tag) {
  Peer& p = *peers_[peer];
  const Header header{tag, static_cast<std::uint32_t>(type), count * size_of(type)};
  std::lock_guard lock(p.send_mutex);
  const struct {
    const char* data;
    std::size_t size;
  } parts[] = {{reinterpret_cast<const char*>(&header), sizeof header}, {static_cast<const char*>(buf), header.bytes}};
  for (const auto& part : parts) {
    std::size_t sent = 0;
    auto last_progress = Clock::now();
    while (sent < part.size) {
      const ssize_t n = ::send(p.fd.get(), part.data + sent, part.size - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        sent += static_cast<std::size_t>(n);
        last_progress = Clock::now();
        continue;
      }
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        const int err = errno;
        std::lock_guard state(mutex_);
        if (aborted_) throw Error(Error::Code::Io, "point-to-point: aborted");
        throw Error(Error::Code::Io, "point-to-point: send to " + peer_name(peer) + ": " + net::errno_text(err) +
                                         " (the rank exited or aborted)");
      }
      const auto deadline = last_progress + timeout_;
      if (Clock::now() >= deadline) {
        throw Error(Error::Code::Timeout, "point-to-point: " + peer_name(peer) + " took no bytes for " +
                                              std::to_string(timeout_.count() / 1000) + " s (collective timeout)");
      }
      pollfd pfd{p.fd.get(), POLLOUT, 0};
      ::poll(&pfd, 1, std::min(net::milliseconds_until(deadline), 1000));
    }
  }
}

// Drains what `peer` sent without blocking into its inbox.
bool P2PChannel::read_some(int peer) {
  Peer& p = *peers_[peer];
  while (true) {
    char* into;
    std::size_t want;
    if (p.header_got < sizeof p.header) {
      into = reinterpret_cast<char*>(&p.header) + p.header_got;
      want = sizeof p.header - p.header_got;
    } else {
      into = p.incoming.bytes.data() + p.body_got;
      want = p.incoming.bytes.size() - p.body_got;
    }
    ssize_t n = want == 0 ? 0 : ::recv(p.fd.get(), into, want, MSG_DONTWAIT);
    if (want != 0) {
      if (n == 0) return false;
      if (n < 0) {
        if (errno == EINTR) continue;
        return errno == EAGAIN || errno == EWOULDBLOCK;
      }
    }
    if (p.header_got < sizeof p.header) {
      p.header_got += static_cast<std::size_t>(n);
      if (p.header_got < sizeof p.header) continue;
      p.incoming = Message{p.header.tag, static_cast<DataType>(p.header.type), {}};
      p.incoming.bytes.resize(p.header.bytes);
      p.body_got = 0;
    } else {
      p.body_got += static_cast<std::size_t>(n);
    }
    if (p.body_got == p.incoming.bytes.size()) {
      std::lock_guard lock(mutex_);
      p.inbox.push_back(std::move(p.incoming));
      p.header_got = 0;
      arrived_.notify_all();
    }
  }
}

void P2PChannel::read_loop() {
  std::vector<pollfd> pfds;
  std::vector<int> polled;
  std::vector<bool> open(static_cast<std::size_t>(size_), true);
  open[rank_] = false;
  while (true) {
    pfds.clear();
    polled.clear();
    for (int r = 0; r < size_; ++r) {
      if (!open[r]) continue;
      pfds.push_back({peers_[r]->fd.get(), POLLIN, 0});
      polled.push_back(r);
    }
    if (pfds.empty()) return;
    if (::poll(pfds.data(), pfds.size(), -1) < 0 && errno != EINTR) return;
    for (std::size_t i = 0; i < pfds.size(); ++i) {
      if (pfds[i].revents == 0) continue;
      const int r = polled[i];
      try {
        open[r] = read_some(r);
      } catch (const std::bad_alloc&) {
        open[r] = false;  // a message larger than memory: the peer counts as lost
      }
      if (open[r]) continue;
      std::lock_guard lock(mutex_);
      peers_[r]->closed = true;  // its descriptor stays open until the destructor
      if (first_closed_ < 0) first_closed_ = r;
      arrived_.notify_all();
    }
  }
}

int P2PChannel::recv(void* buf, std::size_t count, DataType type, int peer, int tag) {
  const std::size_t bytes = count * size_of(type);
  const auto deadline = Clock::now() + timeout_;
  std::unique_lock lock(mutex_);
  while (true) {
    if (aborted_) throw Error(Error::Code::Io, "point-to-point: aborted");
    bool all_closed = true;
    for (int r = 0; r < size_; ++r) {
      if (r == rank_ || (peer != kAnySource && r != peer)) continue;
      Peer& p = *peers_[r];
      auto found = std::find_if(p.inbox.begin(), p.inbox.end(), [&](const Message& m) { return m.tag == tag; });
      if (found != p.inbox.end()) {
        Message message = std::move(*found);
        p.inbox.erase(found);
        lock.unlock();
        if (message.bytes.size() != bytes || message.type != type) {
          throw Error(Error::Code::Mismatch, name(r) + " sent " + describe(message.bytes.size(), message.type) +
                                                 " with tag " + std::to_string(tag) + ", " + name(rank_) +
                                                 " receives " + describe(bytes, type));
        }
        if (bytes) std::memcpy(buf, message.bytes.data(), bytes);
        return r;
      }
      all_closed = all_closed && p.closed;
    }
    if (all_closed) {
      throw Error(Error::Code::Io,
                  "point-to-point: " +
                      (peer == kAnySource ? "every rank (" + peer_name(first_closed_) + " first)" : peer_name(peer)) +
                      " closed its connection before sending a message with tag " + std::to_string(tag) +
                      " (the rank exited or aborted)");
    }
    if (arrived_.wait_until(lock, deadline) == std::cv_status::timeout && Clock::now() >= deadline) {
      throw Error(Error::Code::Timeout, "point-to-point: no message with tag " + std::to_string(tag) + " from " +
                                            (peer == kAnySource ? std::string("any rank") : peer_name(peer)) +
                                            " within " + std::to_string(timeout_.count() / 1000) +
                                            " s (collective timeout)");
    }
  }
}

}  // namespace trainrun::detail
