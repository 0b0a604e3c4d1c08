// detail::Backend: what a collective library must provide (docs/design.md §5.3). The
// Communicator validates arguments and adds context to errors; a backend
// only moves and reduces bytes. Calls block until this rank's part is done
// unless the backend documents otherwise (synchronize() then waits).
// A backend is used from one thread at a time; abort() may be called from
// any thread to make blocked calls fail instead of hanging.
// Failures are trainrun::Error; nothing else escapes a backend.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/device_fusion.h"
#include "backends/host_memory.h"
#include "contract/world.h"
#include "trainrun/error.h"
#include "trainrun/types.h"

namespace trainrun::rendezvous {
class Store;
}

namespace trainrun::detail {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;

  virtual void allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) = 0;
  // In place when send == nullptr: this rank's block already sits in recv.
  virtual void allgather(const void* send, void* recv, std::size_t count, DataType type) = 0;
  virtual void allgatherv(const void* send, void* recv, const std::vector<std::size_t>& counts, DataType type) = 0;
  virtual void broadcast(void* buf, std::size_t count, DataType type, int root) = 0;
  // Every rank's send reduced into root's recv; recv is null on the other
  // ranks, and send == recv at the root is in place. By default an
  // allreduce, off the root into host scratch: a backend whose buffers may
  // be device memory, or that has a reduce of its own, overrides it.
  virtual void reduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, int /*root*/) {
    std::vector<char> scratch(recv ? 0 : count * size_of(type));
    allreduce(send, recv ? recv : scratch.data(), count, type, op);
  }
  // Block r of send (send_counts[r] elements) goes to rank r; block r of
  // recv comes from rank r. send and recv never alias (RoutedBackend, the
  // backend callers hold, copies aliased input aside).
  virtual void alltoall(const void* send, const std::vector<std::size_t>& send_counts, void* recv,
                        const std::vector<std::size_t>& recv_counts, DataType type) = 0;
  // send holds sum(counts) elements; recv gets counts[rank] reduced ones.
  // send and recv never alias.
  virtual void reducescatter(const void* send, void* recv, const std::vector<std::size_t>& counts, DataType type,
                             ReduceOp op) = 0;
  virtual void barrier() = 0;
  virtual void synchronize() = 0;

  // Point-to-point (docs/design.md §12): unlike the collectives, these may
  // be called from any thread, at the same time as each other and as a
  // collective, and never mix bytes with one. send returns once the buffer
  // may be reused and never waits for the receiver to call recv. recv waits
  // for the next message with `tag` from `peer` (kAnySource: any rank),
  // returns its sender, and throws Error(Mismatch) naming both ranks when
  // that message's size or type differ. Messages between a pair with one tag
  // arrive in send order. The caller checks peer (a rank, not this one).
  static constexpr int kAnySource = -1;
  virtual void send(const void* /*buf*/, std::size_t /*count*/, DataType /*type*/, int /*peer*/, int /*tag*/) {
    throw Error(Error::Code::Unsupported, "backend " + name() + " has no point-to-point send");
  }
  virtual int recv(void* /*buf*/, std::size_t /*count*/, DataType /*type*/, int /*peer*/, int /*tag*/) {
    throw Error(Error::Code::Unsupported, "backend " + name() + " has no point-to-point recv");
  }
  virtual void abort() noexcept = 0;
  // The engine's fusion of CUDA buffers; null where this backend takes
  // host memory only (then the engine reduces CUDA tensors one by one).
  virtual DeviceFusion* device_fusion() { return nullptr; }
  // Host memory this backend's collectives read and write in place
  // (backends/host_memory.h: the shared-memory transport's heap); null
  // where every buffer is copied alike. Shared: whoever holds it keeps it
  // mapped (torch tensors from it may outlive the backend).
  virtual std::shared_ptr<HostMemory> host_memory() { return nullptr; }

  // A backend over `ranks` of this one (positions in this backend's world,
  // ascending, this rank among them or not), for a process set. Collective
  // over every rank of this backend, at the same point of its call order.
  // `member` is the set's world when this rank is in `ranks` (null
  // otherwise); the result lives no longer than it. Returns null on ranks
  // outside the set. `set` names the set in rendezvous keys (unique per
  // job, the same on every member).
  virtual std::unique_ptr<Backend> subset(const std::vector<int>& ranks, World* member, const std::string& set) = 0;
};

// What a backend may use while it starts: the world, and the job's
// rendezvous store (null when the job has none, e.g. under mpirun).
// A backend may refine the topology it knows better than the environment
// (the MPI backend sets local and cross ranks from MPI's own node split);
// the communicator keeps the refined world.
struct BackendContext {
  World& world;
  std::shared_ptr<rendezvous::Store> store;
  int generation = 0;  // how many communicators this process made before
  // Elastic jobs: called now and then while the backend waits for its peers
  // at start (outside the store, whose waits check it themselves); throws
  // Error(MembershipChanged) once a newer generation makes this one moot.
  std::function<void()> forming_check;
  // A process set's communicator (Backend::subset): its name in rendezvous
  // keys, e.g. ".set2"; empty for the job's communicator.
  std::string set = "";
};

}  // namespace trainrun::detail
