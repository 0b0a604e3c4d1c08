#include "backends/gloo/mesh_context.h"

#include <gloo/transport/context.h>

#include "trainrun/error.h"

namespace trainrun::detail {

void MeshContext::connect(rendezvous::Store& store, const std::string& scope,
                          const std::shared_ptr<gloo::transport::Device>& device,
                          std::chrono::milliseconds rendezvous_timeout) {
  auto transport = device->createContext(rank, size);
  transport->setTimeout(getTimeout());

  // Our blob holds the address of our pair to every other rank, in rank order.
  std::string blob;
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    const std::vector<char> address = transport->createPair(peer)->address().bytes();
    blob.append(address.data(), address.size());
  }
  store.set(scope, "addr." + std::to_string(rank), blob);
  const std::vector<std::string> blobs =
      store.get_range(scope, "addr.", 0, static_cast<std::uint64_t>(size), rendezvous_timeout);

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
    transport->getPair(peer)->connect(std::vector<char>(begin, begin + address_size));
  }
  device_ = device;
  transportContext_ = std::move(transport);
}

}  // namespace trainrun::detail
