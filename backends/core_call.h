// The core collective the calling thread is in (its op, its call number on
// this communicator and its descriptor), so that a layer below the
// Communicator that waits for a peer (backends/tcp/socket_mesh.h) can say
// which call waits, and the shared-memory round can check that every rank
// is in the same call (backends/shm/shm_collectives.h). Set by
// Communicator::call for the duration of a core call on the caller's
// thread; ops the engine runs on its own thread carry none (the engine's
// stall inspector reports those). Thread-local; no other state.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "backends/call_descriptor.h"

namespace trainrun::detail {

struct CoreCall {
  CoreOp op{};                // CoreOp{} only in a default-made CoreCall
  std::uint64_t number = 0;   // 1 for this communicator's first core call
  CallDescriptor descriptor;  // what every rank must agree on
};

// The innermost core call of this thread, or nullptr.
const CoreCall* current_core_call();
// Its descriptor; empty outside a core call (the engine's thread).
inline CallDescriptor current_call_descriptor() {
  const CoreCall* call = current_core_call();
  return call ? call->descriptor : CallDescriptor{};
}

// Whether this process's collectives move: how many are in progress and
// how many have finished. Core calls (CoreCallScope) and the engine's
// cycles count, each for the life of a CollectiveWait (two relaxed atomic
// increments and one decrement: nothing else on the hot path). An elastic
// worker's peer probe samples it (lib/elastic/peer_probe.h), so that the
// launcher can tell a job stuck on a cut network from a slow one.
class CollectiveWait {
 public:
  CollectiveWait();
  ~CollectiveWait();
  CollectiveWait(const CollectiveWait&) = delete;
  CollectiveWait& operator=(const CollectiveWait&) = delete;
};

struct CollectiveProgress {
  int waiting = 0;
  std::uint64_t finished = 0;
};
CollectiveProgress collective_progress();

class CoreCallScope {
 public:
  CoreCallScope(CoreOp op, std::uint64_t number, CallDescriptor descriptor = {});
  ~CoreCallScope();
  CoreCallScope(const CoreCallScope&) = delete;
  CoreCallScope& operator=(const CoreCallScope&) = delete;

 private:
  CoreCall call_;
  const CoreCall* outer_;
  CollectiveWait wait_;
};

// "trainrun: rank 0 (h1): waiting: allreduce (core call #3) has waited 60 s
// for rank 2 (h3, 10.0.0.3:4312); still waiting" (no newline).
std::string core_wait_message(int rank, const std::string& host, const CoreCall& call, int peer,
                              const std::string& peer_host, std::chrono::seconds waited);

}  // namespace trainrun::detail
