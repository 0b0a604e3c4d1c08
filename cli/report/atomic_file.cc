#include "cli/report/atomic_file.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "os/unique_fd.h"

namespace trainrun::cli {

std::string write_atomically(const std::string& path, const std::string& text) {
  // An unpredictable name, created exclusively (mkostemp: O_EXCL, so no
  // planted link is followed) in the target's folder, then renamed over
  // the target (which replaces a link there rather than writing through it).
  std::string temp = path + ".tmp.XXXXXX";
  UniqueFd file(::mkostemp(temp.data(), O_CLOEXEC));
  if (!file) return std::strerror(errno);
  ::fchmod(file.get(), 0644);
  const int fd = file.get();
  std::size_t done = 0;
  int error = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = n < 0 ? errno : EIO;
      break;
    }
    done += static_cast<std::size_t>(n);
  }
  if (file.close() != 0 && error == 0) error = errno;  // a full disk may show only here
  if (error == 0 && ::rename(temp.c_str(), path.c_str()) != 0) error = errno;
  if (error == 0) return "";
  ::unlink(temp.c_str());
  return std::strerror(error);
}

}  // namespace trainrun::cli
