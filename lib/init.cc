// The process-wide default communicator behind trainrun::init(): the one
// mutable global docs/design.md §5.1 allows, with what belongs to it (an elastic
// job's generation watcher). Guarded by a mutex.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "backends/registry.h"
#include "lib/communicator_access.h"
#include "lib/elastic/forming_store.h"
#include "lib/elastic/generation_join.h"
#include "lib/elastic/generation_watcher.h"
#include "lib/api/membership.h"
#include "lib/fork_guard.h"
#include "lib/rendezvous_client.h"
#include "lib/store_world.h"
#include "contract/world.h"
#include "contract/elastic_protocol.h"
#include "contract/job_records.h"
#include "contract/kv_keys.h"
#include "contract/environment.h"
#include "trainrun/communicator.h"
#include "trainrun/error.h"

namespace trainrun {
namespace {

namespace ep = elastic_protocol;

// A process forked after init() must not run the parent's teardown (join
// threads it does not have, close the parent's connections): it leaves the
// inherited objects be, at shutdown() and at exit.
struct UnlessForked {
  template <typename T>
  void operator()(T* p) const {
    if (!detail::forked_after_init()) delete p;
  }
};

std::mutex g_mutex;
std::unique_ptr<Communicator, UnlessForked> g_communicator;
// Declared after the communicator: destroyed first, since it aborts its
// backend. Outlives it between generations (detail::leave_generation).
std::unique_ptr<detail::GenerationWatcher, UnlessForked> g_watcher;
int g_generation = 0;  // communicators made (non-elastic backend scopes)
int g_joined = -1;     // elastic: the generation last joined
detail::Membership g_membership;

std::shared_ptr<rendezvous::Store> connect_store(const detail::World& world) {
  if (!world.has_rendezvous()) return nullptr;
  rendezvous::HttpStore::Options options;
  options.connect_deadline = world.start_timeout;
  return detail::connect_rendezvous_store(world, options);
}

// Tells the launcher this process is alive, reached the rendezvous and uses
// `backend`: job/rank.{r} = "host pid backend". An elastic job's launcher
// tracks workers, whose rank changes, so there the key is the worker id.
void record_start(rendezvous::Store& store, const detail::World& world, const std::string& backend) {
  const int key = world.elastic ? world.worker_id : world.rank;
  store.set(contract::kScopeJob, std::string(contract::kKeyRankPrefix) + std::to_string(key),
            detail::encode_rank_record({world.hostname, static_cast<long>(::getpid()), backend}));
}

// Announces the worker (once per process), then waits for a generation that
// lists it, newer than any it joined before; `world` takes its slot there.
ep::Assignment join_elastic(rendezvous::Store& store, detail::World& world, const std::string& backend) {
  if (backend == "mpi") {
    throw Error(Error::Code::InvalidArgument, "elastic jobs need the tcp or nccl backend: MPI cannot change its world");
  }
  if (g_joined < 0) {
    store.set(ep::kScope, ep::ready_key(world.worker_id), world.hostname + " " + std::to_string(::getpid()));
  }
  ep::Assignment assignment = detail::join_generation(store, world, g_joined + 1);
  g_joined = world.generation;
  // A new generation forms when its older members reach their next commit:
  // the backend's rendezvous may wait as long as an invitation.
  world.start_timeout = std::max(world.start_timeout, world.elastic_timeout);
  return assignment;
}

std::unique_ptr<detail::GenerationWatcher> start_watcher(const detail::World& world, ep::Assignment joined,
                                                         detail::Backend& backend) {
  rendezvous::HttpStore::Options options;
  options.connect_deadline = detail::GenerationWatcher::kRetry;
  auto probe = std::make_unique<detail::PeerProbe>(world, joined);
  return std::make_unique<detail::GenerationWatcher>(detail::connect_rendezvous_store(world, options),
                                                     std::move(joined), backend, world.worker_id, std::move(probe));
}

std::string who(const detail::World& world) {
  return (world.elastic ? "worker " + std::to_string(world.worker_id) : "rank " + std::to_string(world.rank)) + " (" +
         world.hostname + ")";
}

// The process-wide communicator over `backend`; holds g_mutex.
void install(std::unique_ptr<detail::World> world, std::unique_ptr<detail::Backend> backend) {
  ++g_generation;
  g_membership = {world->elastic, world->worker_id, world->generation, world->generation};
  const int rank = world->rank;
  g_communicator.reset(detail::CommunicatorAccess::make(std::move(world), std::move(backend)).release());
  detail::note_initialized(rank);
}

}  // namespace

Communicator& init() {
  // A forked child gets the inherited communicator, whose collectives fail
  // (lib/fork_guard.h); never the lock, which the parent's threads may have held.
  if (detail::forked_after_init()) {
    if (!g_communicator) detail::fail_forked();
    return *g_communicator;
  }
  std::lock_guard lock(g_mutex);
  if (g_communicator) return *g_communicator;
  auto world = std::make_unique<detail::World>(detail::world_from_env(&std::getenv));
  const std::string whom = who(*world);
  try {
    const std::string name = detail::choose_backend(*world);
    auto store = connect_store(*world);
    if (world->elastic && !store) {
      throw Error(Error::Code::InvalidArgument, "an elastic worker needs the launcher's rendezvous");
    }
    std::optional<ep::Assignment> joined;
    std::function<void()> forming_check;
    if (world->elastic) {
      joined = join_elastic(*store, *world, name);
      auto forming = std::make_shared<detail::FormingStore>(std::move(store), world->generation);
      forming_check = [forming] { forming->fail_if_superseded(); };
      store = std::move(forming);
    }
    if (store) record_start(*store, *world, name);
    const int scope = world->elastic ? world->generation : g_generation;
    auto backend = detail::create_backend(name, detail::BackendContext{*world, store, scope, std::move(forming_check)});
    // Ranks that have formed need the rendezvous again only now and then (a
    // process set, a wait warning): the launcher, or the tree of agents'
    // root, holds no connection per rank for the rest of the job.
    if (store) store->release_connection();
    const detail::World made = *world;
    install(std::move(world), std::move(backend));
    detail::Backend& made_backend = detail::CommunicatorAccess::backend(*g_communicator);
    if (joined) g_watcher.reset(start_watcher(made, *std::move(joined), made_backend).release());
  } catch (const Error& e) {
    throw Error(e.code(), whom + ": init: " + e.what());
  }
  return *g_communicator;
}

void shutdown() {
  if (detail::forked_after_init()) return;  // the parent's to shut down
  std::lock_guard lock(g_mutex);
  g_watcher.reset();
  g_communicator.reset();
  detail::note_shut_down();
}

bool is_initialized() {
  std::lock_guard lock(g_mutex);
  return g_communicator != nullptr;
}

namespace detail {

Communicator& init_from_store(std::shared_ptr<rendezvous::Store> store, const StoreWorldRequest& request) {
  if (forked_after_init() || std::getenv(contract::kEnvRank)) return init();
  std::lock_guard lock(g_mutex);
  if (g_communicator) {
    if (g_communicator->rank() == request.rank && g_communicator->size() == request.size) return *g_communicator;
    // Its engines and process sets may be running: only the caller can end them.
    throw Error(Error::Code::InvalidArgument,
                "rank " + std::to_string(request.rank) + ": init: trainrun is already initialized as rank " +
                    std::to_string(g_communicator->rank()) + " of " + std::to_string(g_communicator->size()) +
                    ", but torch says rank " + std::to_string(request.rank) + " of " + std::to_string(request.size) +
                    ": call init_process_group before trainrun's own init (hvd.init()), or shut trainrun down first");
  }
  auto world = std::make_unique<World>(world_settings_from_env(&std::getenv));
  const std::string whom = "rank " + std::to_string(request.rank) + " (" + world->hostname + ")";
  try {
    *world = world_from_store(std::move(*world), *store, "world" + std::to_string(g_generation), request);
    const std::string name = choose_backend(*world);
    auto backend = create_backend(name, BackendContext{*world, std::move(store), g_generation, nullptr});
    install(std::move(world), std::move(backend));
  } catch (const Error& e) {
    throw Error(e.code(), whom + ": init: " + e.what());
  }
  return *g_communicator;
}

Membership membership() {
  std::lock_guard lock(g_mutex);
  Membership m = g_communicator ? g_membership : Membership{};
  if (g_watcher) m.newest_generation = g_watcher->newest_generation();
  return m;
}

int last_joined_generation() {
  std::lock_guard lock(g_mutex);
  return g_joined;
}

void leave_generation(const std::string& cause) {
  if (forked_after_init()) return;
  std::lock_guard lock(g_mutex);
  if (g_communicator) CommunicatorAccess::backend(*g_communicator).abort();
  if (g_watcher) g_watcher->leave(cause);
  g_communicator.reset();
  note_shut_down();
}

}  // namespace detail
}  // namespace trainrun
