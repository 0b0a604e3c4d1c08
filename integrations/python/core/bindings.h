// The pieces of the `trainrun._core` extension module, one per concept:
// errors (module.cc), the process world (world_bindings.cc), the engine's
// asynchronous collectives (engine_bindings.cc) and elastic training
// (elastic_bindings.cc), process sets (process_set_bindings.cc) and the
// capsule for trainrun._c10d (core_group.cc). The Python package
// (integrations/python/trainrun) is the only intended caller; it maps torch tensors
// to (data pointer, dtype code, shape, device) before calling in here.
#pragma once

#include <pybind11/pybind11.h>

namespace trainrun::python {

void bind_world(pybind11::module_& m);
void bind_engine(pybind11::module_& m);
void bind_elastic(pybind11::module_& m);
void bind_process_sets(pybind11::module_& m);
void bind_core_api(pybind11::module_& m);  // integrations/python/core/core_group.cc

// A Python exception on its way back into the core (out of a function that
// elastic::run called): a trainrun error is thrown as the trainrun::Error of
// its code (HostsUpdatedInterrupt: elastic::HostsUpdated), so that run() can
// recover from it; for any other, it returns. Needs the GIL.
void throw_if_core_error(const pybind11::error_already_set& e);

}  // namespace trainrun::python
