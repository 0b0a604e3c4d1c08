// The process-wide default communicator behind trainrun::init(): the one
// mutable global DESIGN §5 allows. Guarded by a mutex.
#include <unistd.h>

#include <cstdlib>
#include <mutex>

#include "backends/registry.h"
#include "lib/rendezvous_client.h"
#include "lib/world.h"
#include "rendezvous/protocol.h"
#include "trainrun/communicator.h"
#include "trainrun/error.h"

namespace trainrun {
namespace {

std::mutex g_mutex;
std::unique_ptr<Communicator> g_communicator;
int g_generation = 0;

// Tells the launcher this rank is alive, reached the rendezvous and uses
// `backend` (rank.{r} = "host pid backend").
std::shared_ptr<rendezvous::Store> connect_rendezvous(const detail::World& world, const std::string& backend) {
  if (!world.has_rendezvous()) return nullptr;
  rendezvous::HttpStore::Options options;
  options.connect_deadline = world.start_timeout;
  std::shared_ptr<rendezvous::Store> store = detail::connect_rendezvous_store(world, options);
  store->set(protocol::kScopeJob, std::string(protocol::kKeyRankPrefix) + std::to_string(world.rank),
             world.hostname + " " + std::to_string(::getpid()) + " " + backend);
  return store;
}

}  // namespace

Communicator& init() {
  std::lock_guard lock(g_mutex);
  if (g_communicator) return *g_communicator;
  auto world = std::make_unique<detail::World>(detail::world_from_env(&std::getenv));
  try {
    const std::string name = detail::choose_backend(*world);
    auto store = connect_rendezvous(*world, name);
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
