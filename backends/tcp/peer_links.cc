#include "backends/tcp/peer_links.h"

#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <exception>
#include <utility>

#include "os/net.h"

namespace trainrun::detail {
namespace {

const char* prefix(mesh_handshake::Channel channel) {
  return channel == mesh_handshake::Channel::kMesh ? "direct mesh: " : "point-to-point: ";
}

// "host port" as published; IPv6 hosts contain ':' so a space separates.
std::pair<std::string, std::string> split_address(const std::string& published) {
  const std::size_t space = published.rfind(' ');
  if (space == std::string::npos) return {published, ""};
  return {published.substr(0, space), published.substr(space + 1)};
}

}  // namespace

PeerLinks::PeerLinks(Options options, const std::string& address)
    : rank_(options.rank), size_(options.size), secret_(options.secret), names_(std::move(options.names)),
      dial_timeout_(options.dial_timeout), log_(std::move(options.log)), handshake_timeout_(options.handshake_timeout),
      addresses_(static_cast<std::size_t>(size_)), slots_(static_cast<std::size_t>(mesh_handshake::kChannels) * size_) {
  std::uint16_t port = 0;
  listener_ = net::listen_tcp(address, &port, true);
  if (!listener_) {
    throw Error(Error::Code::Io, "direct mesh: cannot listen on " + address + ": " + net::errno_text(errno));
  }
  wake_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake_) throw Error(Error::Code::Io, "direct mesh: eventfd: " + net::errno_text(errno));
  published_ = address + " " + std::to_string(port);
  thread_ = std::thread([this] { run(); });
}

PeerLinks::~PeerLinks() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake();
  thread_.join();
}

void PeerLinks::set_addresses(const std::vector<std::string>& published) {
  {
    std::lock_guard lock(mutex_);
    if (peers_known_) return;  // once: the thread has them
    peers_.clear();
    for (int r = 0; r < size_; ++r) {
      auto [host, port] = split_address(published[r]);
      addresses_[r] = host + ":" + port;
      peers_.push_back({std::move(host), std::move(port), ""});
    }
    for (int r = 0; r < size_; ++r) peers_[r].name = name_locked(r);
    peers_known_ = true;
  }
  wake();
}

std::string PeerLinks::peer_name(int peer) const {
  std::lock_guard lock(mutex_);
  return name_locked(peer);
}

std::string PeerLinks::name_locked(int peer) const {
  return "rank " + std::to_string(names_.empty() ? peer : names_[peer]) + " (" + addresses_[peer] + ")";
}

int PeerLinks::ready(Channel channel, int peer) {
  if (aborted_) throw Error(Error::Code::Io, prefix(channel) + ("aborted while connecting to " + name_locked(peer)));
  Slot& s = slot(channel, peer);
  if (s.fd >= 0) return s.fd;
  if (s.failed) throw Error(s.code, prefix(channel) + s.failure);
  if (!s.asked) {
    s.asked = true;
    asks_.emplace_back(channel, peer);
    wake();
  }
  return -1;
}

int PeerLinks::find(Channel channel, int peer) {
  std::lock_guard lock(mutex_);
  return ready(channel, peer);
}

int PeerLinks::wait(Channel channel, int peer, Clock::time_point until) {
  std::unique_lock lock(mutex_);
  while (true) {
    const int fd = ready(channel, peer);
    if (fd >= 0) return fd;
    if (changed_.wait_until(lock, until) == std::cv_status::timeout) return ready(channel, peer);
  }
}

int PeerLinks::links_up(Channel channel) const {
  std::lock_guard lock(mutex_);
  int up = 0;
  for (int peer = 0; peer < size_; ++peer) up += slots_[static_cast<std::size_t>(channel) * size_ + peer].fd >= 0;
  return up;
}

void PeerLinks::watch(Channel channel, Watcher watcher) {
  std::lock_guard hold(watch_mutex_);
  Watcher& w = watchers_[static_cast<int>(channel)];
  w = std::move(watcher);
  if (!w) return;
  std::vector<std::pair<int, int>> up;
  {
    std::lock_guard lock(mutex_);
    for (int peer = 0; peer < size_; ++peer) {
      if (slot(channel, peer).fd >= 0) up.emplace_back(peer, slot(channel, peer).fd);
    }
  }
  for (const auto& [peer, fd] : up) w(peer, fd);
}

void PeerLinks::abort() noexcept {
  {
    std::lock_guard lock(mutex_);
    aborted_ = true;
    for (const UniqueFd& fd : owned_) ::shutdown(fd.get(), SHUT_RDWR);  // wakes every user of a link
    changed_.notify_all();
  }
  wake();
}

void PeerLinks::wake() noexcept {
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(wake_.get(), &one, sizeof one);
}

// Hands what the wiring made (or failed to) to the slots, then to the watchers.
void PeerLinks::publish(LinkWiring::Events& events) {
  if (events.up.empty() && events.failed.empty()) return;
  std::vector<std::pair<Channel, std::pair<int, int>>> changes;
  {
    std::lock_guard lock(mutex_);
    for (LinkWiring::Up& u : events.up) {
      Slot& s = slot(u.channel, u.peer);
      s.fd = u.fd.get();
      if (aborted_) ::shutdown(s.fd, SHUT_RDWR);
      owned_.push_back(std::move(u.fd));
      changes.push_back({u.channel, {u.peer, s.fd}});
    }
    for (const LinkWiring::Failed& f : events.failed) {
      Slot& s = slot(f.channel, f.peer);
      if (s.fd >= 0) continue;
      s.failed = true;
      s.code = f.code;
      s.failure = f.message;
      changes.push_back({f.channel, {f.peer, -1}});
    }
    changed_.notify_all();
  }
  std::lock_guard hold(watch_mutex_);
  for (const auto& [channel, change] : changes) {
    if (const Watcher& w = watchers_[static_cast<int>(channel)]) w(change.first, change.second);
  }
}

// The links' thread: asks in, handshakes moved, links out, until stopped.
void PeerLinks::run() {
  try {
    LinkWiring wiring(rank_, size_, secret_, listener_.get(), log_, handshake_timeout_);
    bool peers_set = false;
    std::vector<std::pair<Channel, int>> asks;
    while (true) {
      {
        std::lock_guard lock(mutex_);
        if (stopping_ || aborted_) break;
        if (peers_known_ && !peers_set) {
          wiring.set_peers(peers_);
          peers_set = true;
        }
        if (peers_set) asks.swap(asks_);
      }
      const auto deadline = Clock::now() + dial_timeout_;
      for (const auto& [channel, peer] : asks) wiring.dial(channel, peer, deadline);
      asks.clear();
      LinkWiring::Events events;
      wiring.poll(wake_.get(), Clock::time_point::max(), events);
      std::uint64_t count = 0;
      [[maybe_unused]] const ssize_t n = ::read(wake_.get(), &count, sizeof count);
      publish(events);
    }
  } catch (const std::exception& e) {
    // Nothing can make links any more: every one not yet up fails with why.
    std::lock_guard lock(mutex_);
    for (Slot& s : slots_) {
      if (s.fd >= 0) continue;
      s.failed = true;
      s.code = Error::Code::Io;
      s.failure = std::string("cannot make links: ") + e.what();
    }
    changed_.notify_all();
  }
  // Peers that dial from now on are refused: an aborted rank is gone for them.
  listener_.reset();
}

}  // namespace trainrun::detail
