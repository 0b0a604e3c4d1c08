// Entry point of `trainrun._c10d`, the torch.distributed backend
// "trainrun" (docs/design.md §11): the class ProcessGroupTrainrun (a
// subclass of torch's torch.distributed.ProcessGroup in torch 1.13, of its
// Backend in torch 2.x, with its holder, c10::intrusive_ptr, through
// torch's own pybind11 internals: Debian's pybind11 2.10 and torch 1.13
// share internals v4; against another torch, scripts/build_c10d.py builds
// with that torch's own pybind11 and ABI flags), and the calls that
// trainrun.torch.distributed makes: world() for init_process_group,
// prepare_subset()/take_subset() for new_group. The core's collectives
// come from trainrun._core's capsule (integrations/python/core/core_group.h).
#include <pybind11/chrono.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <vector>

#include "integrations/python/core/core_group.h"
#include "integrations/torch_distributed/heap_allocator.h"
#include "integrations/torch_distributed/process_group.h"
#include "integrations/torch_distributed/torch_store.h"

namespace py = pybind11;

namespace trainrun::c10d {
namespace {

python::CoreApi& core_api() {
  static python::CoreApi* api = [] {
    py::capsule capsule = py::module_::import("trainrun._core").attr("_core_api")();
    auto* found = static_cast<python::CoreApi*>(capsule.get_pointer());
    if (found->version != python::CoreApi::kVersion) {
      throw std::runtime_error("trainrun._c10d and trainrun._core come from different builds; reinstall trainrun");
    }
    return found;
  }();
  return *api;
}

// The one line for a world torch and trainrun's launcher disagree about.
std::string launch_hint(int torch_rank, int torch_size, const python::CoreGroup& world) {
  return "backend trainrun: torch says rank " + std::to_string(torch_rank) + " of " + std::to_string(torch_size) +
         ", but trainrun's launcher started this process as rank " + std::to_string(world.rank()) + " of " +
         std::to_string(world.size()) + "; start the script either with `trainrun -np " + std::to_string(torch_size) +
         " python3 SCRIPT` (which sets RANK and WORLD_SIZE) or without trainrun (torchrun, mp.spawn)";
}

// new_group: every rank of the parent makes the set (Communicator::subset,
// collective) in prepare_subset; torch then calls the creator on the members
// only, which take_subset hands the set made for these ranks.
std::mutex pending_mutex;
std::map<std::vector<int>, std::unique_ptr<python::CoreGroup>> pending;

// The default group: trainrun's world, started through torch's store when
// trainrun's launcher did not start this process (torchrun, mp.spawn).
c10::intrusive_ptr<ProcessGroupTrainrun> make_world(const c10::intrusive_ptr<::c10d::Store>& store, int torch_rank,
                                                    int torch_size, std::chrono::milliseconds timeout) {
  python::CoreApi& api = core_api();
  python::ForeignWorld who{torch_rank, torch_size, store_host(store), timeout};
  if (who.store_addr.empty()) {
    if (const char* master = std::getenv("MASTER_ADDR")) who.store_addr = master;
  }
  python::CoreGroup* world = nullptr;
  {
    py::gil_scoped_release release;
    world = &api.world_from_store(foreign_store(store), who);
  }
  if (world->rank() != torch_rank || world->size() != torch_size) {
    throw std::runtime_error(launch_hint(torch_rank, torch_size, *world));
  }
  return c10::make_intrusive<ProcessGroupTrainrun>(*world, nullptr, timeout);
}

void prepare_subset(ProcessGroupTrainrun* parent, const std::vector<int>& ranks) {
  std::unique_ptr<python::CoreGroup> set;
  {
    py::gil_scoped_release release;
    if (parent) {
      parent->run_ordered([&](python::CoreGroup& g) { set = g.subset(ranks); });
    } else {
      set = core_api().world().subset(ranks);
    }
  }
  if (!set) return;
  std::lock_guard lock(pending_mutex);
  pending[ranks] = std::move(set);
}

c10::intrusive_ptr<ProcessGroupTrainrun> take_subset(const std::vector<int>& ranks, int torch_rank, int torch_size,
                                                     std::chrono::milliseconds timeout) {
  std::unique_ptr<python::CoreGroup> set;
  {
    std::lock_guard lock(pending_mutex);
    auto it = pending.find(ranks);
    if (it != pending.end()) {
      set = std::move(it->second);
      pending.erase(it);
    }
  }
  if (!set) {
    throw std::runtime_error(
        "backend trainrun: new_group() reached the backend without trainrun.torch.distributed "
        "preparing it on every rank; import trainrun.torch.distributed before "
        "init_process_group()");
  }
  if (set->rank() != torch_rank || set->size() != torch_size) {
    throw std::runtime_error("backend trainrun: new_group rank " + std::to_string(torch_rank) + " of " +
                             std::to_string(torch_size) + " but the set has rank " + std::to_string(set->rank()) +
                             " of " + std::to_string(set->size()));
  }
  python::CoreGroup& group = *set;
  return c10::make_intrusive<ProcessGroupTrainrun>(group, std::move(set), timeout);
}

// `with HeapScope(group):` as trainrun.torch.distributed opens it around
// DDP's bucket allocations; a group of another backend changes nothing.
class PyHeapScope {
 public:
  explicit PyHeapScope(const py::object& group) {
    if (py::isinstance<ProcessGroupTrainrun>(group)) heap_ = group.cast<ProcessGroupTrainrun*>()->host_memory();
  }
  void enter() { scope_.emplace(heap_); }
  void exit() { scope_.reset(); }

 private:
  std::shared_ptr<detail::HostMemory> heap_;
  std::optional<HeapScope> scope_;
};

}  // namespace
}  // namespace trainrun::c10d

PYBIND11_MODULE(_c10d, m) {
  using trainrun::c10d::ProcessGroupTrainrun;
  m.doc() = "trainrun's torch.distributed backend; use `import trainrun.torch.distributed`.";
  py::module_::import("torch.distributed");  // registers torch's ProcessGroup (and Backend) classes first
  py::class_<ProcessGroupTrainrun, trainrun::c10d::BackendBase, c10::intrusive_ptr<ProcessGroupTrainrun>>(
      m, "ProcessGroupTrainrun", "A torch.distributed process group on trainrun's collectives.");
  m.def("world", &trainrun::c10d::make_world, py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"),
        "The process group over trainrun's world: trainrun's launcher's, whose rank and size must be torch's, "
        "else one made through torch's `store`. Every op fails after `timeout` (a timedelta; 0: no bound but the "
        "core's).");
  m.def("prepare_subset", &trainrun::c10d::prepare_subset, py::arg("parent").none(true), py::arg("ranks"),
        "Collective over every rank of `parent` (None: the world): makes the set of `ranks` (sorted).");
  m.def("take_subset", &trainrun::c10d::take_subset, py::arg("ranks"), py::arg("rank"), py::arg("size"),
        py::arg("timeout"),
        "The process group over the set prepare_subset made for `ranks`, on its members, with world()'s `timeout`.");
  py::class_<trainrun::c10d::PyHeapScope>(
      m, "HeapScope",
      "`with HeapScope(group):` CPU tensors of 1 MiB or more allocated in the block (on this thread) come from the "
      "heap that `group`'s allreduce reads in place, where it has one (a trainrun group on one host).")
      .def(py::init<py::object>(), py::arg("group").none(true))
      .def("__enter__", &trainrun::c10d::PyHeapScope::enter)
      .def("__exit__", [](trainrun::c10d::PyHeapScope& s, const py::args&) { s.exit(); });
}
