#include "integrations/torch_distributed/core_types.h"

namespace trainrun::c10d {

using RedOp = ::c10d::ReduceOp;

std::optional<DataType> core_type(c10::ScalarType type) {
  switch (type) {
    case c10::ScalarType::Byte: return DataType::UInt8;
    case c10::ScalarType::Char: return DataType::Int8;
    case c10::ScalarType::Short: return DataType::Int16;
    case c10::ScalarType::Int: return DataType::Int32;
    case c10::ScalarType::Long: return DataType::Int64;
    case c10::ScalarType::Half: return DataType::Float16;
    case c10::ScalarType::BFloat16: return DataType::BFloat16;
    case c10::ScalarType::Float: return DataType::Float32;
    case c10::ScalarType::Double: return DataType::Float64;
    case c10::ScalarType::Bool: return DataType::Bool;
    default: return std::nullopt;
  }
}

ReduceKind reduce_kind(RedOp::RedOpType op) {
  switch (op) {
    case RedOp::SUM:
    case RedOp::AVG:
    case RedOp::PRODUCT:
    case RedOp::MIN:
    case RedOp::MAX: return ReduceKind::Core;
    case RedOp::BAND:
    case RedOp::BOR:
    case RedOp::BXOR: return ReduceKind::Bitwise;
    default: return ReduceKind::Refused;
  }
}

ReduceOp core_op(RedOp::RedOpType op) {
  switch (op) {
    case RedOp::AVG: return ReduceOp::Average;
    case RedOp::PRODUCT: return ReduceOp::Product;
    case RedOp::MIN: return ReduceOp::Min;
    case RedOp::MAX: return ReduceOp::Max;
    default: return ReduceOp::Sum;
  }
}

const char* op_name(RedOp::RedOpType op) {
  switch (op) {
    case RedOp::SUM: return "SUM";
    case RedOp::AVG: return "AVG";
    case RedOp::PRODUCT: return "PRODUCT";
    case RedOp::MIN: return "MIN";
    case RedOp::MAX: return "MAX";
    case RedOp::BAND: return "BAND";
    case RedOp::BOR: return "BOR";
    case RedOp::BXOR: return "BXOR";
    case RedOp::PREMUL_SUM: return "PREMUL_SUM";
    default: return "an unknown op";
  }
}

}  // namespace trainrun::c10d
