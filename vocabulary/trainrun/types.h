// Element types and reduction operators shared by every layer of trainrun.
// Plain enums and constexpr helpers: no state, safe from any thread.
#pragma once

#include <cstddef>

namespace trainrun {

// Int16 and Bool come last so the values of the others stay as they were.
// Bool reduces logically (Sum and Max are "or", Product and Min are "and"),
// as Horovod's; NCCL has no 16-bit integer type, so the nccl backend moves
// Int16 but does not reduce it. A new type goes after Bool and becomes the
// last one that kDataTypeCount counts.
enum class DataType { UInt8, Int8, Int32, Int64, Float16, BFloat16, Float32, Float64, Int16, Bool };

// How many DataType values there are; kAllDataTypes lists each of them.
inline constexpr std::size_t kDataTypeCount = static_cast<std::size_t>(DataType::Bool) + 1;

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

// size_of covers every type, so a type added without moving kDataTypeCount fails here.
static_assert(size_of(static_cast<DataType>(kDataTypeCount)) == 0, "kDataTypeCount must count every DataType");

const char* to_string(DataType type);
const char* to_string(ReduceOp op);

// Every DataType, in the enum's order: what tests and tools loop over.
inline constexpr DataType kAllDataTypes[] = {
    DataType::UInt8,    DataType::Int8,    DataType::Int32,   DataType::Int64, DataType::Float16,
    DataType::BFloat16, DataType::Float32, DataType::Float64, DataType::Int16, DataType::Bool};
static_assert(sizeof(kAllDataTypes) / sizeof(kAllDataTypes[0]) == kDataTypeCount,
              "kAllDataTypes must list every DataType");
static_assert(
    [] {
      for (std::size_t i = 0; i < kDataTypeCount; ++i) {
        if (kAllDataTypes[i] != static_cast<DataType>(i)) return false;
      }
      return true;
    }(),
    "kAllDataTypes must list the DataType values in the enum's order");
inline constexpr ReduceOp kAllReduceOps[] = {ReduceOp::Sum, ReduceOp::Average, ReduceOp::Min, ReduceOp::Max,
                                             ReduceOp::Product};

}  // namespace trainrun
