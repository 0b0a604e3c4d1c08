// The pieces of the `trainrun._core` extension module, one per concept:
// errors (module.cc), the process world (world_bindings.cc) and the engine's
// asynchronous collectives (engine_bindings.cc). The Python package
// (lib/python/trainrun) is the only intended caller; it maps torch tensors
// to (data pointer, dtype code, shape, device) before calling in here.
#pragma once

#include <pybind11/pybind11.h>

namespace trainrun::python {

void bind_world(pybind11::module_& m);
void bind_engine(pybind11::module_& m);

}  // namespace trainrun::python
