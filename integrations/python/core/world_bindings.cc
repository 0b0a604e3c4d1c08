// The process world for Python: init/shutdown and the rank layout of the
// process-wide communicator (trainrun::init()). Calls that may block on
// other ranks (init, shutdown) release the GIL so that other Python threads
// (e.g. a Runner's output pump) keep running.
#include <pybind11/stl.h>

#include <string>
#include <utility>
#include <vector>

#include "backends/backend_versions.h"
#include "integrations/python/core/bindings.h"
#include "integrations/python/core/process_set_table.h"
#include "trainrun/communicator.h"
#include "trainrun/error.h"

namespace py = pybind11;

namespace trainrun::python {
namespace {

// Horovod raises before init() rather than starting a world implicitly.
Communicator& world() {
  if (!is_initialized()) {
    throw Error(Error::Code::InvalidArgument, "trainrun has not been initialized; call trainrun.torch.init() first");
  }
  return init();
}

}  // namespace

void bind_world(py::module_& m) {
  m.def(
      "init", [] { init(); }, py::call_guard<py::gil_scoped_release>(),
      "Starts the process-wide communicator from the environment (idempotent).");
  m.def(
      "shutdown",
      [] {
        ProcessSetTable::instance().clear();  // the sets' engines stop before the job's communicator goes
        trainrun::shutdown();
      },
      py::call_guard<py::gil_scoped_release>(),
      "Stops the engines (the process sets' too) and tears the communicator down; init() may follow.");
  m.def("is_initialized", &trainrun::is_initialized);
  m.def("rank", [] { return world().rank(); });
  m.def("size", [] { return world().size(); });
  m.def("local_rank", [] { return world().local_rank(); });
  m.def("local_size", [] { return world().local_size(); });
  m.def("cross_rank", [] { return world().cross_rank(); });
  m.def("cross_size", [] { return world().cross_size(); });
  m.def("hostname", [] { return world().hostname(); });
  m.def("backend_name", [] { return world().backend_name(); });
  m.def(
      "built_backends",
      [] {
        std::vector<std::pair<std::string, std::string>> backends;
        for (const detail::BackendInfo& b : detail::built_backends()) backends.emplace_back(b.name, b.version);
        return backends;
      },
      "(name, library version) of each backend this build has, e.g. ('mpi', 'Open MPI v4.1.4').");
}

}  // namespace trainrun::python
