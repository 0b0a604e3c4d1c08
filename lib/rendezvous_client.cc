#include "lib/rendezvous_client.h"

#include <string>

#include "rendezvous/auth.h"
#include "rendezvous/protocol.h"
#include "trainrun/error.h"

namespace trainrun::detail {

std::unique_ptr<rendezvous::HttpStore> connect_rendezvous_store(const World& world,
                                                                rendezvous::HttpStore::Options options) {
  const auto secret = rendezvous::secret_from_hex(world.secret_hex);
  if (!secret) {
    throw Error(Error::Code::InvalidArgument, std::string(protocol::kEnvSecret) + " is not " +
                                                  std::to_string(2 * protocol::kSecretBytes) + " hex digits");
  }
  return std::make_unique<rendezvous::HttpStore>(world.rendezvous_addr, world.rendezvous_port, *secret, options);
}

}  // namespace trainrun::detail
