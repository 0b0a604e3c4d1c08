#include "backends/mpi/mpi_types.h"

#include <utility>

#include "backends/mpi/mpi_runtime.h"
#include "backends/reduction.h"

namespace trainrun::detail {
namespace {

int half_index(DataType type) { return type == DataType::Float16 ? 0 : 1; }

int op_index(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Average: return 0;
    case ReduceOp::Min: return 1;
    case ReduceOp::Max: return 2;
    case ReduceOp::Product: return 3;
  }
  return 0;
}

constexpr ReduceOp kOpOfIndex[] = {ReduceOp::Sum, ReduceOp::Min, ReduceOp::Max, ReduceOp::Product};

// MPI's user-op contract: inout[i] = in[i] (op) inout[i]. The kernels are
// commutative, so every rank of a symmetric algorithm gets the same bits.
template <DataType T, int Op>
void half_reduce(void* in, void* inout, int* length, MPI_Datatype*) {
  reduce_function(T, kOpOfIndex[Op])(inout, in, inout, static_cast<std::size_t>(*length));
}

template <DataType T, int... Op>
void create_ops(MPI_Op (&ops)[sizeof...(Op)], std::integer_sequence<int, Op...>) {
  MPI_User_function* functions[] = {&half_reduce<T, Op>...};
  for (std::size_t i = 0; i < sizeof...(Op); ++i) {
    check_mpi(MPI_Op_create(functions[i], /*commute=*/1, &ops[i]), "MPI_Op_create");
  }
}

}  // namespace

MpiTypes::MpiTypes() {
  for (auto& ops : half_ops_) {
    for (MPI_Op& op : ops) op = MPI_OP_NULL;
  }
  for (MPI_Datatype& type : half_) {
    check_mpi(MPI_Type_contiguous(2, MPI_BYTE, &type), "MPI_Type_contiguous");
    check_mpi(MPI_Type_commit(&type), "MPI_Type_commit");
  }
  const auto ops = std::make_integer_sequence<int, kHalfOps>{};
  create_ops<DataType::Float16>(half_ops_[half_index(DataType::Float16)], ops);
  create_ops<DataType::BFloat16>(half_ops_[half_index(DataType::BFloat16)], ops);
}

MpiTypes::~MpiTypes() {
  if (MpiRuntime::finalized()) return;
  for (auto& ops : half_ops_) {
    for (MPI_Op& op : ops) {
      if (op != MPI_OP_NULL) MPI_Op_free(&op);
    }
  }
  for (MPI_Datatype& type : half_) {
    if (type != MPI_DATATYPE_NULL) MPI_Type_free(&type);
  }
}

MPI_Datatype MpiTypes::datatype(DataType type) const {
  switch (type) {
    case DataType::UInt8: return MPI_UINT8_T;
    case DataType::Int8: return MPI_INT8_T;
    case DataType::Int16: return MPI_INT16_T;
    case DataType::Bool: return MPI_C_BOOL;
    case DataType::Int32: return MPI_INT32_T;
    case DataType::Int64: return MPI_INT64_T;
    case DataType::Float16:
    case DataType::BFloat16: return half_[half_index(type)];
    case DataType::Float32: return MPI_FLOAT;
    case DataType::Float64: return MPI_DOUBLE;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op MpiTypes::op(DataType type, ReduceOp op) const {
  if (type == DataType::Float16 || type == DataType::BFloat16) {
    return half_ops_[half_index(type)][op_index(op)];
  }
  if (type == DataType::Bool) return op == ReduceOp::Product || op == ReduceOp::Min ? MPI_LAND : MPI_LOR;
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Average: return MPI_SUM;
    case ReduceOp::Min: return MPI_MIN;
    case ReduceOp::Max: return MPI_MAX;
    case ReduceOp::Product: return MPI_PROD;
  }
  return MPI_OP_NULL;
}

}  // namespace trainrun::detail
