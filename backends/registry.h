// Which backend a world uses by default, and the factory. With
// backend_versions.cc, the only place that knows which backends were
// compiled in.
#pragma once

#include <memory>
#include <string>

#include "backends/backend.h"

namespace trainrun::detail {

// TRAINRUN_BACKEND if set, else mpi under Open MPI/Slurm when built, else tcp.
std::string choose_backend(const World& world);
// A RoutedBackend over the named CPU backend (for "nccl": the default one,
// with NCCL for CUDA buffers). Throws Error(InvalidArgument) for an unknown
// or not-built name.
std::unique_ptr<Backend> create_backend(const std::string& name, const BackendContext& context);

}  // namespace trainrun::detail
