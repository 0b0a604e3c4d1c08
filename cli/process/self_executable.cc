#include "cli/process/self_executable.h"

#include <unistd.h>

#include <climits>

#include "trainrun/error.h"

namespace trainrun::cli {

std::string self_executable() {
  char path[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) throw Error(Error::Code::Internal, "cannot find trainrun's own executable");
  return std::string(path, static_cast<std::size_t>(n));
}

}  // namespace trainrun::cli
