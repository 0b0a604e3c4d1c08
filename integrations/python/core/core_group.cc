// trainrun._core's side of integrations/python/core/core_group.h: CoreGroup over a
// Communicator, and the capsule that hands the world's to trainrun._c10d.
#include "integrations/python/core/core_group.h"

#include <mutex>
#include <utility>

#include "backends/backend.h"
#include "lib/communicator_access.h"
#include "lib/store_world.h"
#include "rendezvous/store.h"
#include "trainrun/error.h"
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
  std::shared_ptr<detail::HostMemory> host_memory() override {
    return detail::CommunicatorAccess::backend(comm_).host_memory();
  }
  std::unique_ptr<CoreGroup> subset(const std::vector<int>& ranks) override {
    std::unique_ptr<Communicator> set = comm_.subset(ranks);
    if (!set) return nullptr;
    return std::make_unique<CommunicatorGroup>(std::move(set));
  }

 private:
  Communicator& comm_;
  std::unique_ptr<Communicator> owned_;
};

// A ForeignStore as the library's rendezvous store: keys "trainrun/SCOPE/KEY"
// (torch prefixes each group's own), its errors as trainrun::Error.
class ForeignRendezvousStore final : public rendezvous::Store {
 public:
  explicit ForeignRendezvousStore(std::shared_ptr<ForeignStore> store) : store_(std::move(store)) {}

  void set(std::string_view scope, std::string_view key, std::string_view value) override {
    guarded([&] { store_->set(name(scope, key), std::string(value)); });
  }
  std::string get(std::string_view scope, std::string_view key, std::chrono::milliseconds timeout) override {
    std::optional<std::string> value;
    guarded([&] { value = store_->get(name(scope, key), timeout); });
    if (!value) {
      throw Error(Error::Code::Timeout, "torch's store: timed out after " + std::to_string(timeout.count() / 1000) +
                                            " s waiting for " + name(scope, key));
    }
    return *std::move(value);
  }
  std::int64_t add(std::string_view scope, std::string_view key, std::int64_t delta) override {
    std::int64_t value = 0;
    guarded([&] { value = store_->add(name(scope, key), delta); });
    return value;
  }

 private:
  static std::string name(std::string_view scope, std::string_view key) {
    return "trainrun/" + std::string(scope) + "/" + std::string(key);
  }
  template <typename F>
  static void guarded(F&& call) {
    try {
      call();
    } catch (const std::exception& e) {
      throw Error(Error::Code::Io, std::string("torch's store: ") + e.what());
    }
  }

  std::shared_ptr<ForeignStore> store_;
};

// The world's group follows init(): a new one after shutdown() and init().
CoreGroup& group_of(Communicator& comm) {
  static std::mutex mutex;
  static std::unique_ptr<CommunicatorGroup> group;
  static Communicator* of = nullptr;
  std::lock_guard lock(mutex);
  if (&comm != of) {
    group = std::make_unique<CommunicatorGroup>(comm);
    of = &comm;
  }
  return *group;
}

CoreGroup& world_group() { return group_of(init()); }

CoreGroup& world_group_from_store(std::shared_ptr<ForeignStore> store, const ForeignWorld& who) {
  detail::StoreWorldRequest request{who.rank, who.size, who.store_addr, who.timeout};
  return group_of(detail::init_from_store(std::make_shared<ForeignRendezvousStore>(std::move(store)), request));
}

CoreApi core_api{CoreApi::kVersion, &world_group, &world_group_from_store};

}  // namespace

void bind_core_api(py::module_& m) {
  m.def(
      "_core_api", [] { return py::capsule(static_cast<void*>(&core_api), kCoreApiCapsule); },
      "The core's collectives for trainrun._c10d (integrations/python/core/core_group.h).");
}

}  // namespace trainrun::python
