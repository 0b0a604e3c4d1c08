// Process sets for Python (trainrun.torch.ProcessSet, Horovod's API): the
// ProcessSetTable's calls. add and remove are collective and may wait on
// other ranks, so they release the GIL.
#include <pybind11/stl.h>

#include <optional>
#include <vector>

#include "integrations/python/core/bindings.h"
#include "integrations/python/core/process_set_table.h"
#include "trainrun/error.h"

namespace py = pybind11;

namespace trainrun::python {

void bind_process_sets(py::module_& m) {
  using Release = py::call_guard<py::gil_scoped_release>;
  m.def(
      "add_process_set", [](const std::vector<int>& ranks) { return ProcessSetTable::instance().add(ranks); },
      Release(), py::arg("ranks"), "The new set's id, or None when a set of these ranks exists.");
  m.def(
      "remove_process_set", [](int id) { return ProcessSetTable::instance().remove(id); }, Release(), py::arg("id"),
      "False for the job's set (0) and for unknown ids.");
  m.def("process_set_ids", [] { return ProcessSetTable::instance().ids(); });
  m.def(
      "process_set_ranks", [](int id) { return ProcessSetTable::instance().ranks(id); }, py::arg("id"));
  m.def(
      "process_set_included", [](int id) { return ProcessSetTable::instance().includes(id); }, py::arg("id"));
  m.def(
      "process_set_rank",
      [](int id) {
        if (!ProcessSetTable::instance().includes(id)) {
          throw Error(Error::Code::InvalidArgument, "Process is not part of provided process set.");
        }
        return ProcessSetTable::instance().communicator(id, "rank").rank();
      },
      py::arg("id"));
  m.def(
      "process_set_size", [](int id) { return static_cast<int>(ProcessSetTable::instance().ranks(id).size()); },
      py::arg("id"));
}

}  // namespace trainrun::python
