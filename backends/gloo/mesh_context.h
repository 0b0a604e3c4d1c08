// MeshContext: a gloo::Context whose full mesh is wired through trainrun's
// rendezvous store with one PUT and one multi-key GET per rank (Gloo's own
// connectFullMesh waits and gets each peer's key separately: N^2 requests
// for the job). Owned by GlooBackend; not thread-safe.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include <gloo/context.h>
#include <gloo/transport/device.h>

#include "rendezvous/store.h"

namespace trainrun::detail {

class MeshContext : public gloo::Context {
 public:
  MeshContext(int rank, int size) : gloo::Context(rank, size) {}

  // Publishes this rank's pair addresses under scope/addr.{rank}, fetches
  // everyone's in one request and connects every pair. Throws
  // Error(Timeout) naming the ranks that never published.
  void connect(rendezvous::Store& store, const std::string& scope,
               const std::shared_ptr<gloo::transport::Device>& device,
               std::chrono::milliseconds rendezvous_timeout);
};

}  // namespace trainrun::detail
