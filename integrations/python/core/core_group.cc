// trainrun._core's side of integrations/python/core/core_group.h: CoreGroup over a
// Communicator, and the capsule that hands the world's to trainrun._c10d.
#include "integrations/python/core/core_group.h"

#include <mutex>
#include <utility>

#include "backends/backend.h"
#include "lib/communicator_access.h"
#include "integrations/python/core/bindings.h"
#include "trainrun/communicator.h"

namespace py = pybind11;

namespace trainrun::python {
namespace {

// A Communicator, owned (a process set) or not (the world's, owned by init()).
class CommunicatorGroup final : public CoreGroup {
 public:
  explicit CommunicatorGroup(Communicator& comm) : comm_(comm) {}
  explicit CommunicatorGroup(std::unique_ptr<Communicator> owned) : comm_(*owned), owned_(std::move(owned)) {}

  int rank() const override { return comm_.rank(); }
  int size() const override { return comm_.size(); }
  int job_rank(int r) const override { return comm_.job_rank(r); }
  std::string hostname() const override { return comm_.hostname(); }
  std::string backend_name() const override { return comm_.backend_name(); }

  void allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) override {
    comm_.allreduce(send, recv, count, type, op);
  }
  void allgather(const void* send, void* recv, std::size_t count, DataType type) override {
    comm_.allgather(send, recv, count, type);
  }
  void allgatherv(const void* send, std::size_t count, void* recv, const std::vector<std::size_t>& counts,
                  DataType type) override {
    comm_.allgatherv(send, count, recv, counts, type);
  }
  void broadcast(void* buf, std::size_t count, DataType type, int root) override {
    comm_.broadcast(buf, count, type, root);
  }
  void reduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, int root) override {
    comm_.reduce(send, recv, count, type, op, root);
  }
  void alltoall(const void* send, void* recv, std::size_t count, DataType type) override {
    comm_.alltoall(send, recv, count, type);
  }
  void reducescatter(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) override {
    comm_.reducescatter(send, recv, count, type, op);
  }
  void barrier() override { comm_.barrier(); }
  void send(const void* buf, std::size_t count, DataType type, int peer, int tag) override {
    comm_.send(buf, count, type, peer, tag);
  }
  int recv(void* buf, std::size_t count, DataType type, int peer, int tag) override {
    return comm_.recv(buf, count, type, peer, tag);
  }
  void abort() noexcept override { detail::CommunicatorAccess::backend(comm_).abort(); }
  std::unique_ptr<CoreGroup> subset(const std::vector<int>& ranks) override {
    std::unique_ptr<Communicator> set = comm_.subset(ranks);
    if (!set) return nullptr;
    return std::make_unique<CommunicatorGroup>(std::move(set));
  }

 private:
  Communicator& comm_;
  std::unique_ptr<Communicator> owned_;
};

// The world's group follows init(): a new one after shutdown() and init().
CoreGroup& world_group() {
  static std::mutex mutex;
  static std::unique_ptr<CommunicatorGroup> group;
  static Communicator* of = nullptr;
  std::lock_guard lock(mutex);
  Communicator& comm = init();
  if (&comm != of) {
    group = std::make_unique<CommunicatorGroup>(comm);
    of = &comm;
  }
  return *group;
}

CoreApi core_api{CoreApi::kVersion, &world_group};

}  // namespace

void bind_core_api(py::module_& m) {
  m.def(
      "_core_api", [] { return py::capsule(static_cast<void*>(&core_api), kCoreApiCapsule); },
      "The core's collectives for trainrun._c10d (integrations/python/core/core_group.h).");
}

}  // namespace trainrun::python
