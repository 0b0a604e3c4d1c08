// Pure: torch's element types and reduce ops as trainrun's core names them
// (trainrun/types.h). Every type torch's Gloo backend reduces has a core
// type; complex tensors reach a backend as real views (torch's Python side
// does that), so they need none.
#pragma once

#include <c10/core/ScalarType.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <optional>

#include "trainrun/types.h"

namespace trainrun::c10d {

std::optional<DataType> core_type(c10::ScalarType type);

// How an allreduce of `op` runs: on the core (Sum, Average, Min, Max,
// Product), as a bitwise fold of an allgather (BAND, BOR, BXOR), or not at
// all (PREMUL_SUM: NCCL's alone).
enum class ReduceKind { Core, Bitwise, Refused };
ReduceKind reduce_kind(::c10d::ReduceOp::RedOpType op);
ReduceOp core_op(::c10d::ReduceOp::RedOpType op);  // for ReduceKind::Core
const char* op_name(::c10d::ReduceOp::RedOpType op);

}  // namespace trainrun::c10d
