// Human-readable names of the public enums.
#include "trainrun/error.h"
#include "trainrun/types.h"

namespace trainrun {

const char* to_string(DataType type) {
  switch (type) {
    case DataType::UInt8: return "uint8";
    case DataType::Int8: return "int8";
    case DataType::Int16: return "int16";
    case DataType::Bool: return "bool";
    case DataType::Int32: return "int32";
    case DataType::Int64: return "int64";
    case DataType::Float16: return "float16";
    case DataType::BFloat16: return "bfloat16";
    case DataType::Float32: return "float32";
    case DataType::Float64: return "float64";
  }
  return "?";
}

const char* to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Average: return "average";
    case ReduceOp::Min: return "min";
    case ReduceOp::Max: return "max";
    case ReduceOp::Product: return "product";
  }
  return "?";
}

const char* to_string(Error::Code code) {
  switch (code) {
    case Error::Code::InvalidArgument: return "invalid argument";
    case Error::Code::Timeout: return "timeout";
    case Error::Code::Io: return "I/O error";
    case Error::Code::Backend: return "backend error";
    case Error::Code::Mismatch: return "mismatch";
    case Error::Code::Unsupported: return "unsupported";
    case Error::Code::Internal: return "internal error";
    case Error::Code::MembershipChanged: return "membership changed";
  }
  return "?";
}

}  // namespace trainrun
