// Open MPI's shared-memory segments (/dev/shm/vader_segment.HOST.*) that a
// job whose ranks mpirun or trainrun killed leaves behind: a killed rank
// cannot unlink its segment (a known limit, docs/slurm-and-mpi.md). A test
// that makes that happen holds a VaderSegmentsGuard, which removes what
// appeared while it lived, so that no run accumulates them.
// For serial tests: a segment another job made meanwhile would go too.
#pragma once

#include <filesystem>
#include <set>
#include <string>
#include <system_error>

namespace trainrun::test {

inline std::set<std::string> vader_segments() {
  std::set<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("vader_segment.", 0) == 0) names.insert(name);
  }
  return names;
}

class VaderSegmentsGuard {
 public:
  VaderSegmentsGuard() : before_(vader_segments()) {}
  ~VaderSegmentsGuard() {
    std::error_code ec;
    for (const auto& name : vader_segments()) {
      if (!before_.count(name)) std::filesystem::remove("/dev/shm/" + name, ec);
    }
  }
  VaderSegmentsGuard(const VaderSegmentsGuard&) = delete;
  VaderSegmentsGuard& operator=(const VaderSegmentsGuard&) = delete;

 private:
  const std::set<std::string> before_;
};

}  // namespace trainrun::test
