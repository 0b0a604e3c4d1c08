#include "backends/tcp/p2p_channel.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "os/net.h"
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
  int fd = -1;            // the link, once up (PeerLinks owns it)
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

P2PChannel::P2PChannel(const Options& options, std::shared_ptr<PeerLinks> links)
    : rank_(options.rank), size_(options.size), names_(options.names), timeout_(options.timeout),
      links_(std::move(links)) {
  for (int r = 0; r < size_; ++r) peers_.push_back(std::make_unique<Peer>());
  wake_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake_) throw Error(Error::Code::Io, "point-to-point: eventfd: " + net::errno_text(errno));
  links_->watch(PeerLinks::Channel::kP2P, [this](int peer, int fd) { linked(peer, fd); });
}

P2PChannel::~P2PChannel() {
  links_->watch(PeerLinks::Channel::kP2P, nullptr);
  abort();
  if (reader_.joinable()) reader_.join();
}

void P2PChannel::linked(int peer, int fd) {
  std::lock_guard lock(mutex_);
  Peer& p = *peers_[peer];
  if (fd < 0) {
    // Never made (refused: the rank is gone): as good as closed.
    if (p.fd < 0 && !p.closed) {
      p.closed = true;
      if (first_closed_ < 0) first_closed_ = peer;
    }
    arrived_.notify_all();
    return;
  }
  p.fd = fd;
  if (!reader_.joinable() && !aborted_) reader_ = std::thread([this] { read_loop(); });
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(wake_.get(), &one, sizeof one);
}

int P2PChannel::link_to(int peer) {
  const int fd = links_->wait(PeerLinks::Channel::kP2P, peer, Clock::now() + timeout_);
  if (fd < 0) {
    throw Error(Error::Code::Timeout, "point-to-point: no connection with " + peer_name(peer) + " within " +
                                          std::to_string(timeout_.count() / 1000) + " s (collective timeout)");
  }
  return fd;
}

std::string P2PChannel::name(int rank) const { return "rank " + std::to_string(names_.empty() ? rank : names_[rank]); }

void P2PChannel::abort() noexcept {
  std::lock_guard lock(mutex_);
  aborted_ = true;
  for (auto& peer : peers_) {
    if (peer->fd >= 0) ::shutdown(peer->fd, SHUT_RDWR);  // wakes every send
  }
  arrived_.notify_all();
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(wake_.get(), &one, sizeof one);  // and the reader
}

void P2PChannel::send(const void* buf, std::size_t count, DataType type, int peer, int tag) {
  Peer& p = *peers_[peer];
  const int fd = link_to(peer);
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
      const ssize_t n = ::send(fd, part.data + sent, part.size - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
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
      pollfd pfd{fd, POLLOUT, 0};
      ::poll(&pfd, 1, std::min(net::milliseconds_until(deadline), 1000));
    }
  }
}

// Drains what `peer` sent without blocking into its inbox.
bool P2PChannel::read_some(int peer, int fd) {
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
    ssize_t n = want == 0 ? 0 : ::recv(fd, into, want, MSG_DONTWAIT);
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
  while (true) {
    pfds.assign(1, {wake_.get(), POLLIN, 0});
    polled.clear();
    {
      std::lock_guard lock(mutex_);
      if (aborted_) return;
      for (int r = 0; r < size_; ++r) {
        if (peers_[r]->fd < 0 || peers_[r]->closed) continue;
        pfds.push_back({peers_[r]->fd, POLLIN, 0});
        polled.push_back(r);
      }
    }
    if (::poll(pfds.data(), pfds.size(), -1) < 0 && errno != EINTR) return;
    if (pfds[0].revents != 0) {
      std::uint64_t count = 0;
      [[maybe_unused]] const ssize_t n = ::read(wake_.get(), &count, sizeof count);
    }
    for (std::size_t i = 1; i < pfds.size(); ++i) {
      if (pfds[i].revents == 0) continue;
      const int r = polled[i - 1];
      bool open = true;
      try {
        open = read_some(r, pfds[i].fd);
      } catch (const std::bad_alloc&) {
        open = false;  // a message larger than memory: the peer counts as lost
      }
      if (open) continue;
      std::lock_guard lock(mutex_);
      peers_[r]->closed = true;
      if (first_closed_ < 0) first_closed_ = r;
      arrived_.notify_all();
    }
  }
}

int P2PChannel::recv(void* buf, std::size_t count, DataType type, int peer, int tag) {
  const std::size_t bytes = count * size_of(type);
  const auto deadline = Clock::now() + timeout_;
  // The links from the sender (any source: from every rank) are asked for,
  // so that one that cannot be made (the rank is gone) ends the wait.
  for (int r = 0; r < size_; ++r) {
    if (r == rank_ || (peer != kAnySource && r != peer)) continue;
    try {
      links_->find(PeerLinks::Channel::kP2P, r);
    } catch (const Error&) {
      // Aborted, or the link failed: the watcher marks it closed, the wait below says so.
    }
  }
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
