// LibTorch tensors as the engine's non-owning trainrun::Tensor views, for
// the LibTorch integration's translation units only. Header-only.
#pragma once

#include <torch/types.h>

#include <string>

#include "trainrun/engine.h"
#include "trainrun/error.h"

namespace trainrun::torch {

inline DataType data_type_of(const ::torch::Tensor& t, const std::string& name) {
  switch (t.scalar_type()) {
    case ::torch::kFloat: return DataType::Float32;
    case ::torch::kDouble: return DataType::Float64;
    case ::torch::kHalf: return DataType::Float16;
    case ::torch::kBFloat16: return DataType::BFloat16;
    case ::torch::kInt: return DataType::Int32;
    case ::torch::kLong: return DataType::Int64;
    case ::torch::kChar: return DataType::Int8;
    case ::torch::kByte: return DataType::UInt8;
    case ::torch::kShort: return DataType::Int16;
    case ::torch::kBool: return DataType::Bool;
    default:
      throw Error(
          Error::Code::Unsupported,
          "tensor '" + name + "': dtype " + std::string(c10::toString(t.scalar_type())) + " has no trainrun DataType");
  }
}

// Throws Unsupported for what the engine cannot take: CUDA or sparse tensors.
inline void check_host_tensor(const ::torch::Tensor& t, const std::string& name) {
  if (!t.device().is_cpu()) {
    throw Error(Error::Code::Unsupported, "tensor '" + name + "' is on " + t.device().str() +
                                              ": the engine takes CPU tensors only (this LibTorch has no CUDA)");
  }
  if (t.is_sparse()) throw Error(Error::Code::Unsupported, "tensor '" + name + "' is sparse");
}

// A view of a contiguous CPU tensor; the tensor must outlive the operation.
inline Tensor tensor_view(const ::torch::Tensor& t) {
  return Tensor{t.data_ptr(), data_type_of(t, "?"), t.sizes().vec(), kCpu};
}

}  // namespace trainrun::torch
