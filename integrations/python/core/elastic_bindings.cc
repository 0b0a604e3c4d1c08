// Elastic training (trainrun/elastic.h) for Python: the core's State, whose
// parts save and load through Python callables, and the core's run(), so
// that Python and C++ jobs share one recovery loop (restore, re-form, sync,
// reset callbacks). Every call releases the GIL while it may wait on other
// ranks; the Python callables take it back while they run. A trainrun error
// raised by the Python function under run() goes back into the core as the
// Error of its code (throw_if_core_error), so run() recovers from it.
#include <pybind11/functional.h>

#include <string>
#include <utility>

#include "integrations/python/core/bindings.h"
#include "trainrun/elastic.h"

namespace py = pybind11;

namespace trainrun::python {
namespace {

using elastic::State;

// Calls `callable` under the GIL; Python errors other than trainrun's pass as they are.
void call_python(const py::function& callable) {
  py::gil_scoped_acquire acquire;
  try {
    callable();
  } catch (const py::error_already_set& e) {
    throw_if_core_error(e);
    throw;
  }
}

// A part of a State: save() -> bytes and load(bytes), both Python callables.
void add_part(State& state, std::string name, py::function save, py::function load) {
  // The callables live in the State's std::functions: copies and the final
  // release of their references must hold the GIL (State is destroyed from Python).
  state.add(
      std::move(name),
      [save] {
        py::gil_scoped_acquire acquire;
        return std::string(py::bytes(save()));
      },
      [load](const std::string& bytes) {
        py::gil_scoped_acquire acquire;
        load(py::bytes(bytes));
      });
}

}  // namespace

void bind_elastic(py::module_& m) {
  using Release = py::call_guard<py::gil_scoped_release>;
  py::class_<State>(m, "ElasticState",
                    "The core's elastic::State: named parts saved as bytes; see trainrun.elastic.State.")
      .def(py::init<>())
      .def("add", &add_part, py::arg("name"), py::arg("save"), py::arg("load"),
           "Adds a part: save() returns bytes, load(bytes) puts them back. Same parts, same order on every rank.")
      .def("commit", &State::commit, Release(),
           "Keeps every part's save() as the point to restore; raises HostsUpdatedInterrupt on every rank "
           "when workers joined or left (elastic jobs). Collective.")
      .def("restore", &State::restore, Release(), "Loads the last commit (or sync) into every part.")
      .def("sync", &State::sync, Release(),
           "Makes every rank hold the state of the lowest rank that has a commit. Collective.")
      .def_property_readonly("commits", &State::commits)
      .def(
          "on_reset",
          [](State& state, py::function callback) { state.on_reset([callback] { call_python(callback); }); },
          py::arg("callback"), "Called by run() after each re-form, once the state is synchronized.");
  m.def(
      "elastic_run", [](State& state, const py::function& fn) { elastic::run(state, [&fn] { call_python(fn); }); },
      Release(), py::arg("state"), py::arg("fn"),
      "init(), state.sync(), fn(); in an elastic job, recovers from a lost or added worker by restoring the "
      "last commit, re-forming the world and calling fn() again.");
  m.def("elastic_enabled", &elastic::enabled, "Whether this process runs in an elastic job (TRAINRUN_ELASTIC=1).");
  m.def("elastic_generation", &elastic::generation,
        "The generation of the current world (0 when not elastic or before init()).");
}

}  // namespace trainrun::python
