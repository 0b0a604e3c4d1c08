// The one difference between the torch versions the c10d backend builds
// against that its code sees: the class a custom backend derives from.
// torch 1.13 (Debian 12's python3-torch): c10d::ProcessGroup itself. torch
// 2.x: c10d::Backend, which torch's ProcessGroup wraps, one per device
// type (trainrun.torch.distributed registers the backend for cpu and cuda).
// The virtual collectives, Work and the options have the same shape in
// both. Header-only.
#pragma once

#include <torch/version.h>

#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif

namespace trainrun::c10d {

#if TORCH_VERSION_MAJOR >= 2
using BackendBase = ::c10d::Backend;
#else
using BackendBase = ::c10d::ProcessGroup;
#endif

}  // namespace trainrun::c10d
