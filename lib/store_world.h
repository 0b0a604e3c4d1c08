// The world of a process that trainrun's launcher did not start (torchrun,
// mp.spawn, a Slurm or Kubernetes script that sets MASTER_ADDR): the
// framework that started it hands over a store shared by the job, a rank
// and a size (torch.distributed's init_process_group), and the ranks learn
// the rest through that store as they would through the launcher's
// rendezvous (docs/design.md §11.1). Such a store has no authentication:
// the mesh's secret travels through it, so the job is as safe as the store.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "contract/world.h"
#include "rendezvous/store.h"
#include "trainrun/communicator.h"

namespace trainrun::detail {

struct StoreWorldRequest {
  int rank = 0;
  int size = 1;
  // The store's host (torch's MASTER_ADDR); empty when unknown (a file
  // store): then ranks on one host use the loopback, ranks on several
  // hosts need TRAINRUN_IFACE or TRAINRUN_NETWORK.
  std::string store_addr;
  std::chrono::milliseconds timeout{1'800'000};  // for the exchange (torch's group timeout)
};

// `settings` (world_settings_from_env) completed through `store`, whose keys
// under `scope` every rank reads and writes once: each rank's host gives
// local and cross ranks; rank 0's fresh secret authenticates the mesh.
// Collective over the request's ranks. Throws Error(InvalidArgument) for a
// bad request, Error(Timeout) naming the rank that did not arrive.
World world_from_store(World settings, rendezvous::Store& store, const std::string& scope,
                       const StoreWorldRequest& request);

// init() from `store`: the process-wide communicator, made once (later
// calls with the same rank and size return it; another rank or size while
// it stands is Error(InvalidArgument)). A process trainrun's launcher
// started is not asked: init() is used. Throws as init() does.
Communicator& init_from_store(std::shared_ptr<rendezvous::Store> store, const StoreWorldRequest& request);

}  // namespace trainrun::detail
