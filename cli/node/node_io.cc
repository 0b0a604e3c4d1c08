#include "cli/node/node_io.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

namespace trainrun::cli::node {

bool send_frame(int fd, FrameType type, std::string_view payload, net::Deadline deadline, std::string* error) {
  std::string bytes;
  append_frame(bytes, type, 0, 0, payload);
  std::string_view left = bytes;
  while (!left.empty()) {
    const ssize_t n = ::write(fd, left.data(), left.size());
    if (n > 0) {
      left.remove_prefix(static_cast<std::size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && errno == EAGAIN) {
      if (!net::wait_fd(fd, POLLOUT, deadline)) return *error = "timed out", false;
    } else {
      return *error = net::errno_text(errno), false;
    }
  }
  return true;
}

std::optional<Frame> receive_frame(int fd, FrameReader& reader, net::Deadline deadline, std::string* error) {
  while (true) {
    try {
      if (std::optional<Frame> frame = reader.next()) return frame;
    } catch (const std::exception& e) {
      *error = std::string("a bad frame: ") + e.what();
      return std::nullopt;
    }
    char buffer[4096];
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) {
      reader.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
    } else if (n == 0) {
      *error = "closed";
      return std::nullopt;
    } else if (errno == EAGAIN) {
      if (!net::wait_fd(fd, POLLIN, deadline)) return *error = "timed out", std::nullopt;
    } else if (errno != EINTR) {
      *error = net::errno_text(errno);
      return std::nullopt;
    }
  }
}

}  // namespace trainrun::cli::node
