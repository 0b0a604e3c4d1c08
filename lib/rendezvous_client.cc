#include "lib/rendezvous_client.h"

#include <string>

#include "rendezvous/auth.h"
#include "contract/environment.h"
#include "contract/kv_keys.h"
#include "contract/auth_scheme.h"
#include "trainrun/error.h"

namespace trainrun::detail {

std::unique_ptr<rendezvous::HttpStore> connect_rendezvous_store(const World& world,
                                                                rendezvous::HttpStore::Options options) {
  const auto secret = rendezvous::secret_from_hex(world.secret_hex);
  if (!secret) {
    throw Error(Error::Code::InvalidArgument, std::string(contract::kEnvSecret) + " is not " +
                                                  std::to_string(2 * contract::kSecretBytes) + " hex digits");
  }
  return std::make_unique<rendezvous::HttpStore>(world.rendezvous_addr, world.rendezvous_port, *secret, options);
}

void publish_job_key(const World& world, std::string_view key, const std::string& value) {
  if (!world.has_rendezvous()) return;
  try {
    rendezvous::HttpStore::Options options;
    options.connect_deadline = std::chrono::seconds(2);
    options.request_timeout = std::chrono::seconds(5);
    connect_rendezvous_store(world, options)->set(contract::kScopeJob, key, value);
  } catch (const std::exception&) {
    // The report lacks it; the job goes on.
  }
}

}  // namespace trainrun::detail
