#include "os/net.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "trainrun/error.h"

namespace trainrun::net {

std::string errno_text(int err) {
  const char* name = strerrorname_np(err);
  return std::string(std::strerror(err)) + " (" + (name ? name : "errno " + std::to_string(err)) + ")";
}

int milliseconds_until(Deadline deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  return static_cast<int>(std::clamp<long long>(left.count(), 0, 1 << 30));
}

bool wait_fd(int fd, short events, Deadline deadline) {
  pollfd pfd{fd, events, 0};
  while (true) {
    const int rc = ::poll(&pfd, 1, milliseconds_until(deadline));
    if (rc > 0) return true;
    if (rc == 0) return false;
    if (errno != EINTR) throw Error(Error::Code::Io, "poll: " + errno_text(errno));
  }
}

UniqueFd connect_tcp(const std::string& host, const std::string& port, Deadline deadline, int* error,
                     std::string* resolve_error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  const int gai = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &result);
  if (gai != 0) {
    if (resolve_error) *resolve_error = gai_strerror(gai);
    *error = EHOSTUNREACH;
    return UniqueFd();
  }
  *error = 0;
  for (addrinfo* ai = result; ai; ai = ai->ai_next) {
    UniqueFd socket(::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    const int fd = socket.get();
    if (fd < 0) {
      *error = errno;
      continue;
    }
    int rc = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      if (!wait_fd(fd, POLLOUT, deadline)) {
        *error = ETIMEDOUT;
      } else {
        socklen_t length = sizeof *error;
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, error, &length);
        rc = *error == 0 ? 0 : -1;
      }
    } else if (rc != 0) {
      *error = errno;
    }
    if (rc == 0) {
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      ::freeaddrinfo(result);
      *error = 0;
      return socket;
    }
  }
  ::freeaddrinfo(result);
  return UniqueFd();
}

namespace {

std::uint16_t port_of(const sockaddr_storage& address) {
  return ntohs(address.ss_family == AF_INET6 ? reinterpret_cast<const sockaddr_in6*>(&address)->sin6_port
                                             : reinterpret_cast<const sockaddr_in*>(&address)->sin_port);
}

std::string text_of(const sockaddr_storage& address) {
  char text[INET6_ADDRSTRLEN] = {};
  const void* raw = address.ss_family == AF_INET6
                        ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in6*>(&address)->sin6_addr)
                        : static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(&address)->sin_addr);
  ::inet_ntop(address.ss_family, raw, text, sizeof text);
  return text;
}

// bind + listen on address:port (0: the kernel picks); the bound port in *bound_port.
UniqueFd listen_at(const std::string& address, std::uint16_t port, bool nonblocking, std::uint16_t* bound_port,
                   int* error) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_PASSIVE;
  addrinfo* result = nullptr;
  if (::getaddrinfo(address.c_str(), std::to_string(port).c_str(), &hints, &result) != 0) {
    *error = EADDRNOTAVAIL;
    return UniqueFd();
  }
  UniqueFd socket(::socket(result->ai_family, SOCK_STREAM | SOCK_CLOEXEC | (nonblocking ? SOCK_NONBLOCK : 0), 0));
  const int fd = socket.get();
  const int one = 1;
  if (fd >= 0 && port != 0) ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  if (fd < 0 || ::bind(fd, result->ai_addr, result->ai_addrlen) != 0 || ::listen(fd, SOMAXCONN) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) != 0) {
    *error = errno;
    socket.reset();
  }
  ::freeaddrinfo(result);
  if (socket) *bound_port = port_of(bound);
  return socket;
}

}  // namespace

std::uint16_t free_tcp_port(const std::string& address) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_PASSIVE;
  addrinfo* result = nullptr;
  if (::getaddrinfo(address.c_str(), "0", &hints, &result) != 0 || !result) return 0;
  const UniqueFd socket(::socket(result->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const int fd = socket.get();
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  std::uint16_t port = 0;
  if (fd >= 0 && ::bind(fd, result->ai_addr, result->ai_addrlen) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) == 0) {
    port = port_of(bound);
  }
  ::freeaddrinfo(result);
  return port;
}

std::string local_address_toward(const std::string& host) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* result = nullptr;
  if (::getaddrinfo(host.c_str(), "9", &hints, &result) != 0 || !result) {
    throw Error(Error::Code::Io, "cannot resolve '" + host + "' to pick a network interface");
  }
  UniqueFd socket(::socket(result->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  const int fd = socket.get();
  sockaddr_storage local{};
  socklen_t length = sizeof local;
  const bool ok = fd >= 0 && ::connect(fd, result->ai_addr, result->ai_addrlen) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0;
  const int err = errno;
  socket.reset();
  ::freeaddrinfo(result);
  if (!ok) throw Error(Error::Code::Io, "no route to '" + host + "': " + errno_text(err));
  return text_of(local);
}

UniqueFd listen_tcp(const std::string& address, std::uint16_t* port, bool nonblocking) {
  int error = 0;
  return listen_at(address, 0, nonblocking, port, &error);
}

UniqueFd listen_tcp_on(const std::string& address, std::uint16_t port, bool nonblocking, int* error) {
  std::uint16_t bound = 0;
  return listen_at(address, port, nonblocking, &bound, error);
}

void set_keepalive(int fd, int seconds) {
  const int on = 1, idle = std::max(1, seconds / 3), interval = std::max(1, seconds / 6), probes = 3;
  const unsigned int user_timeout_ms = static_cast<unsigned int>(seconds) * 1000;
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes);
  // Unacknowledged bytes fail the connection too, not only an idle one.
  ::setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof user_timeout_ms);
}

std::string peer_address(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  return ::getpeername(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0 ? text_of(address) : "";
}

std::string own_address(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  return ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0 ? text_of(address) : "";
}

}  // namespace trainrun::net
