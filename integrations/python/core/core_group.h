// CoreGroup: the core's blocking collectives (docs/design.md §5.1) as another
// extension module of the package sees them. trainrun._core holds the one
// copy of libtrainrun.a in a Python process (the process-wide communicator,
// its process sets, its rendezvous generations); trainrun._c10d, the
// torch.distributed backend (integrations/torch_distributed), is built without the
// library and reaches it through this interface, handed over in a capsule
// (`trainrun._core._core_api()`, named kCoreApiCapsule). So no collective is
// implemented twice, and one process never holds two communicators that
// would meet under the same rendezvous keys.
// Only virtual calls and standard types cross between the modules, which
// are built with hidden symbols: a trainrun::Error thrown behind this
// interface is caught on the other side as the std::runtime_error it is.
// A CoreGroup is used like a Communicator, from one thread at a time; it
// lives no longer than the communicator behind it (trainrun::shutdown()
// ends the world's).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/host_memory.h"
#include "trainrun/types.h"

namespace trainrun::python {

class CoreGroup {
 public:
  virtual ~CoreGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual int job_rank(int r) const = 0;
  virtual std::string hostname() const = 0;
  virtual std::string backend_name() const = 0;

  // Communicator's calls and in-place forms, unchanged.
  virtual void allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) = 0;
  virtual void allgather(const void* send, void* recv, std::size_t count, DataType type) = 0;
  virtual void allgatherv(const void* send, std::size_t count, void* recv, const std::vector<std::size_t>& counts,
                          DataType type) = 0;
  virtual void broadcast(void* buf, std::size_t count, DataType type, int root) = 0;
  virtual void reduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, int root) = 0;
  virtual void alltoall(const void* send, void* recv, std::size_t count, DataType type) = 0;
  virtual void reducescatter(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) = 0;
  virtual void barrier() = 0;
  // Communicator::subset: collective over every rank of this group; null
  // on the ranks outside the set.
  virtual std::unique_ptr<CoreGroup> subset(const std::vector<int>& ranks) = 0;
  // Communicator::send / recv (peer -1: any rank); unlike the calls above,
  // from any thread, at the same time as they run.
  virtual void send(const void* buf, std::size_t count, DataType type, int peer, int tag) = 0;
  virtual int recv(void* buf, std::size_t count, DataType type, int peer, int tag) = 0;
  // Backend::abort(), from any thread: the group's blocked and later calls
  // fail (Error(Io), "aborted"), its connections close for the peers; no
  // way back. The c10d backend's op timeout (the mpi backend: MPI_Abort,
  // which ends the job).
  virtual void abort() noexcept = 0;
  // The heap the group's collectives read in place (Communicator::
  // allocate_memory's; backends/host_memory.h), kept mapped while held;
  // null where every buffer is copied alike. From any thread.
  virtual std::shared_ptr<detail::HostMemory> host_memory() = 0;
};

// A key-value store the job's framework set up (torch.distributed's Store:
// torchrun's TCPStore, env://, tcp://, file://), as trainrun._c10d hands it
// to trainrun._core for a process trainrun's launcher did not start
// (lib/store_world.h). Called from any thread; errors are any
// std::exception.
class ForeignStore {
 public:
  virtual ~ForeignStore() = default;
  virtual void set(const std::string& key, const std::string& value) = 0;
  // Waits up to `timeout` for the key; nullopt when it did not appear.
  virtual std::optional<std::string> get(const std::string& key, std::chrono::milliseconds timeout) = 0;
  virtual std::int64_t add(const std::string& key, std::int64_t delta) = 0;
};

// Who this process is, as torch's init_process_group says.
struct ForeignWorld {
  int rank = 0;
  int size = 1;
  std::string store_addr;  // the store's host; empty when unknown
  std::chrono::milliseconds timeout{0};
};

// What the capsule points at; static in trainrun._core.
struct CoreApi {
  static constexpr int kVersion = 6;  // 2: send, recv; 3: abort; 4: reduce; 5: world_from_store; 6: host_memory
  int version = kVersion;
  // The job's group over trainrun::init()'s communicator, started on the
  // first call (it blocks while the ranks meet). Throws as init() does.
  CoreGroup& (*world)() = nullptr;
  // The same, started through `store` when trainrun's launcher did not
  // start this process (under it: world()). Throws as init() does.
  CoreGroup& (*world_from_store)(std::shared_ptr<ForeignStore> store, const ForeignWorld& who) = nullptr;
};

inline constexpr const char* kCoreApiCapsule = "trainrun._core.CoreApi";

}  // namespace trainrun::python
