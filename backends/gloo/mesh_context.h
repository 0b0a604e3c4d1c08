// MeshContext: a gloo::Context whose pairs are wired from address blobs the
// caller exchanges itself (GlooBackend does it with one PUT and one
// multi-key GET per rank; Gloo's own connectFullMesh waits and gets each
// peer's key separately, N^2 requests for the job). Not thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <gloo/context.h>
#include <gloo/transport/device.h>

namespace trainrun::detail {

class MeshContext : public gloo::Context {
 public:
  MeshContext(int rank, int size) : gloo::Context(rank, size) {}

  // Creates one pair per peer on `device`; returns this rank's blob (the
  // address of its pair to every other rank, in rank order) to publish.
  std::string create_pairs(const std::shared_ptr<gloo::transport::Device>& device);
  // Connects every pair, given every rank's blob indexed by rank.
  void connect_pairs(const std::vector<std::string>& blobs);

 private:
  std::shared_ptr<gloo::transport::Context> pending_;
  std::shared_ptr<gloo::transport::Device> pending_device_;
};

}  // namespace trainrun::detail
