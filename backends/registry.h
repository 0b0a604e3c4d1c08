// Which backends this build has, which one a world uses by default, and the
// factory. The only place that knows which backends were compiled in.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"

namespace trainrun::detail {

struct BackendInfo {
  std::string name;
  std::string version;  // of the library behind it, e.g. "Open MPI v4.1.4"
};

// nccl's entry probes the host (loads NCCL and the CUDA driver): for
// `trainrun --check-build`, not for every start.
std::vector<BackendInfo> built_backends();
// TRAINRUN_BACKEND if set, else mpi under Open MPI/Slurm when built, else tcp.
std::string choose_backend(const World& world);
// A RoutedBackend over the named CPU backend (for "nccl": the default one,
// with NCCL for CUDA buffers). Throws Error(InvalidArgument) for an unknown
// or not-built name.
std::unique_ptr<Backend> create_backend(const std::string& name, const BackendContext& context);

}  // namespace trainrun::detail
