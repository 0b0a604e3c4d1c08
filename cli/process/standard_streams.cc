#include "cli/process/standard_streams.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace trainrun::cli {

bool open_standard_streams() {
  for (int fd = STDIN_FILENO; fd <= STDERR_FILENO; ++fd) {
    if (::fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
    // The lowest free number is `fd` itself: those below are open by now.
    // Owned by the process, never closed: no UniqueFd.
    if (::open("/dev/null", (fd == STDIN_FILENO ? O_RDONLY : O_WRONLY)) < 0) return false;
  }
  return true;
}

}  // namespace trainrun::cli
