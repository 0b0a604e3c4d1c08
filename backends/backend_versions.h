// Which backends this build has, each with its library's version: for
// `trainrun --check-build` and the Python package's built_backends(). Its
// own file, apart from the factory (registry.h), so that the launcher links
// the versions alone: none of the backends themselves, and not libmpi.
#pragma once

#include <string>
#include <vector>

namespace trainrun::detail {

struct BackendInfo {
  std::string name;
  std::string version;  // of the library behind it, e.g. "Open MPI v4.1.4"
};

// nccl's entry probes the host (loads NCCL and the CUDA driver), mpi's
// loads the MPI library: for `trainrun --check-build`, not for every start.
std::vector<BackendInfo> built_backends();

}  // namespace trainrun::detail
