// The process-wide default communicator behind trainrun::init(): the one
// mutable global DESIGN §5 allows. Guarded by a mutex.
#include <unistd.h>

#include <cstdlib>
#include <mutex>

#include "backends/registry.h"
#include "lib/world.h"
#include "rendezvous/http_store.h"
#include "rendezvous/protocol.h"
#include "trainrun/communicator.h"
#include "trainrun/error.h"

namespace trainrun {
namespace {

std::mutex g_mutex;
std::unique_ptr<Communicator> g_communicator;
int g_generation = 0;

std::shared_ptr<rendezvous::Store> connect_rendezvous(const detail::World& world) {
  if (!world.has_rendezvous()) return nullptr;
  const auto secret = rendezvous::secret_from_hex(world.secret_hex);
  if (!secret) {
    throw Error(Error::Code::InvalidArgument,
                std::string(protocol::kEnvSecret) + " is not " +
                    std::to_string(2 * protocol::kSecretBytes) + " hex digits");
  }
  rendezvous::HttpStore::Options options;
  options.connect_deadline = world.start_timeout;
  auto store = std::make_shared<rendezvous::HttpStore>(world.rendezvous_addr,
                                                       world.rendezvous_port, *secret, options);
  // Tells the launcher this rank is alive and reached the rendezvous.
  store->set(protocol::kScopeJob, std::string(protocol::kKeyRankPrefix) + std::to_string(world.rank),
             world.hostname + " " + std::to_string(::getpid()));
  return store;
}

}  // namespace

Communicator& init() {
  std::lock_guard lock(g_mutex);
  if (g_communicator) return *g_communicator;
  auto world = std::make_unique<detail::World>(detail::world_from_env(&std::getenv));
  try {
    const std::string name = detail::choose_backend(*world);
    auto store = connect_rendezvous(*world);
    // For the launcher's JSON report (--report).
    if (store) store->set(protocol::kScopeJob, std::string(protocol::kKeyBackendPrefix) + std::to_string(world->rank), name);
    auto backend = detail::create_backend(name, detail::BackendContext{*world, store, g_generation});
    ++g_generation;
    g_communicator = std::make_unique<Communicator>(std::move(world), std::move(backend));
  } catch (const Error& e) {
    throw Error(e.code(), "rank " + std::to_string(world->rank) + " (" + world->hostname +
                              "): init: " + e.what());
  }
  return *g_communicator;
}

void shutdown() {
  std::lock_guard lock(g_mutex);
  g_communicator.reset();
}

bool is_initialized() {
  std::lock_guard lock(g_mutex);
  return g_communicator != nullptr;
}

}  // namespace trainrun
