// UniqueFd: the one owner of a file descriptor (a socket, pipe end, file,
// signalfd, eventfd, pidfd, shared-memory file). Move-only; the destructor
// closes it, release() hands it back unowned, reset() closes the current one
// and takes another. Every layer opens descriptors, so this header sits in
// os/, the layer just above the vocabulary, and includes only the C library. It is the only place in the project that
// calls close(2), besides a forked child closing its inherited descriptors
// before exec (cli/process/subprocess.cc, which may not allocate there).
// Not thread safe: one owner at a time, like the descriptor itself.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace trainrun {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) noexcept : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const noexcept { return fd_; }
  bool valid() const noexcept { return fd_ >= 0; }
  explicit operator bool() const noexcept { return valid(); }

  // The descriptor, no longer owned: the caller closes it (or hands it on).
  [[nodiscard]] int release() noexcept { return std::exchange(fd_, -1); }

  // Closes the descriptor held (if any) and owns `fd` (-1: none) from now on.
  // errno is kept: a caller that reports an error after a reset still sees
  // the errno of the failure, not close's.
  void reset(int fd = -1) noexcept {
    if (fd_ >= 0 && fd_ != fd) {
      const int saved = errno;
      ::close(fd_);
      errno = saved;
    }
    fd_ = fd;
  }

  // Closes the descriptor now and returns close(2)'s result (0, or -1 with
  // errno): for files whose last write errors show only at close (NFS,
  // a full disk). Owns nothing afterwards.
  int close() noexcept {
    const int fd = release();
    return fd < 0 ? 0 : ::close(fd);
  }

 private:
  int fd_ = -1;
};

// A pipe's two ends (pipe2 with `flags`, e.g. O_CLOEXEC). On failure both
// are invalid and errno says why.
struct PipeFds {
  UniqueFd read, write;
};
inline PipeFds make_pipe(int flags) {
  int fds[2];
  if (::pipe2(fds, flags) != 0) return {};
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

// Sets (or, with `on` false, clears) O_NONBLOCK on `fd`; false with errno
// when fcntl fails.
inline bool set_nonblocking(int fd, bool on = true) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0) return false;
  return ::fcntl(fd, F_SETFL, on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK) == 0;
}

}  // namespace trainrun
