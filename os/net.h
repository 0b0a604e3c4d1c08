// Small POSIX socket helpers shared by every client-side connection in
// trainrun (rendezvous client, direct mesh, launcher probes): connect with a
// deadline, wait on a descriptor, describe errno. Stateless, thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "os/unique_fd.h"

namespace trainrun::net {

using Deadline = std::chrono::steady_clock::time_point;

// "Connection refused (ECONNREFUSED)".
std::string errno_text(int err);
// Milliseconds left until `deadline` (0 when passed), for poll().
int milliseconds_until(Deadline deadline);
// Waits for `events` on fd until the deadline; false on timeout.
bool wait_fd(int fd, short events, Deadline deadline);
// A connected, non-blocking, TCP_NODELAY, close-on-exec socket to host:port,
// or none (invalid) with *error set to an errno (EAI failures become EHOSTUNREACH and
// *resolve_error says why).
UniqueFd connect_tcp(const std::string& host, const std::string& port, Deadline deadline, int* error,
                     std::string* resolve_error = nullptr);
// A TCP port nobody listens on at `address` right now (bind to port 0, read
// it, close), for services the ranks start themselves (torch's MASTER_PORT).
std::uint16_t free_tcp_port(const std::string& address);
// A listening TCP socket (close-on-exec; non-blocking when asked) on a
// numeric `address`, port chosen by the kernel into *port; none on failure.
UniqueFd listen_tcp(const std::string& address, std::uint16_t* port, bool nonblocking = false);
// The same on `port` (SO_REUSEADDR, so a launcher started again at once
// binds its port again); none on failure, with *error an errno
// (EADDRINUSE: another process listens there).
UniqueFd listen_tcp_on(const std::string& address, std::uint16_t port, bool nonblocking, int* error);
// TCP keepalive on a connected socket: a peer whose host died or whose
// link is cut (no FIN) fails reads and writes within about `seconds`.
void set_keepalive(int fd, int seconds);
// The numeric address of a connected socket's peer, or of its own end.
std::string peer_address(int fd);
std::string own_address(int fd);
// The local address a socket toward `host` would use (UDP connect +
// getsockname): the interface that routes there, never a guess.
std::string local_address_toward(const std::string& host);

}  // namespace trainrun::net
