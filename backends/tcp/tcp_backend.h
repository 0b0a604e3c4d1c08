// The tcp backend: trainrun's own transport for host buffers. Ranks on one
// host share memory (backends/shm), ranks on several hosts talk over an
// authenticated TCP mesh (socket_mesh.h), two-level where that is faster
// (two_level_*.h), and point-to-point goes over connections of its own
// (p2p_channel.h). Everything is wired through the job's rendezvous store.
// "gloo" is this backend's former name (contract/world.h). See
// backends/backend.h for the contract.
#pragma once

#include <memory>
#include <string>

#include "backends/backend.h"

namespace trainrun::detail {

std::unique_ptr<Backend> make_tcp_backend(const BackendContext& context);
std::string tcp_version();

}  // namespace trainrun::detail
