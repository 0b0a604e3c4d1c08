// Element types and reduction operators shared by every layer of trainrun.
// Plain enums and constexpr helpers: no state, safe from any thread.
#pragma once

#include <cstddef>

namespace trainrun {

// Int16 and Bool come last so the values of the others stay as they were.
// Bool reduces logically (Sum and Max are "or", Product and Min are "and"),
// as Horovod's; NCCL has no 16-bit integer type, so Int16 runs on the CPU
// backends only.
enum class DataType { UInt8, Int8, Int32, Int64, Float16, BFloat16, Float32, Float64, Int16, Bool };

// Average is Sum divided by the number of ranks; integer types truncate
// toward zero, as C++ integer division does.
enum class ReduceOp { Sum, Average, Min, Max, Product };

constexpr std::size_t size_of(DataType type) {
  switch (type) {
    case DataType::UInt8:
    case DataType::Int8:
    case DataType::Bool: return 1;
    case DataType::Int16: return 2;
    case DataType::Float16:
    case DataType::BFloat16: return 2;
    case DataType::Int32:
    case DataType::Float32: return 4;
    case DataType::Int64:
    case DataType::Float64: return 8;
  }
  return 0;
}

constexpr bool is_floating(DataType type) {
  return type == DataType::Float16 || type == DataType::BFloat16 || type == DataType::Float32 ||
         type == DataType::Float64;
}

const char* to_string(DataType type);
const char* to_string(ReduceOp op);

inline constexpr DataType kAllDataTypes[] = {DataType::UInt8,   DataType::Int8,    DataType::Int32,
                                             DataType::Int64,   DataType::Float16, DataType::BFloat16,
                                             DataType::Float32, DataType::Float64};
inline constexpr ReduceOp kAllReduceOps[] = {ReduceOp::Sum, ReduceOp::Average, ReduceOp::Min, ReduceOp::Max,
                                             ReduceOp::Product};

}  // namespace trainrun
