#include "backends/gloo/mesh_context.h"

#include <gloo/transport/context.h>

#include "trainrun/error.h"

namespace trainrun::detail {

std::string MeshContext::create_pairs(const std::shared_ptr<gloo::transport::Device>& device) {
  pending_ = device->createContext(rank, size);
  pending_->setTimeout(getTimeout());
  pending_device_ = device;
  std::string blob;
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    const std::vector<char> address = pending_->createPair(peer)->address().bytes();
    blob.append(address.data(), address.size());
  }
  return blob;
}

void MeshContext::connect_pairs(const std::vector<std::string>& blobs) {
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    const std::string& theirs = blobs[peer];
    const std::size_t address_size = theirs.size() / static_cast<std::size_t>(size - 1);
    if (address_size == 0 || theirs.size() % static_cast<std::size_t>(size - 1) != 0) {
      throw Error(Error::Code::Internal, "rendezvous: rank " + std::to_string(peer) +
                                             " published a malformed Gloo address blob");
    }
    // In the peer's blob, our entry comes at our rank, minus one past the peer.
    const std::size_t index = static_cast<std::size_t>(rank > peer ? rank - 1 : rank);
    const char* begin = theirs.data() + index * address_size;
    pending_->getPair(peer)->connect(std::vector<char>(begin, begin + address_size));
  }
  device_ = std::move(pending_device_);
  transportContext_ = std::move(pending_);
}

}  // namespace trainrun::detail
