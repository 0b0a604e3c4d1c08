// broadcast_parameters, broadcast_optimizer_state and allreduce of
// <trainrun/torch.h>, over the engine's named collectives.
#include <torch/serialize.h>

#include <sstream>

#include "integrations/libtorch/tensor_view.h"
#include "trainrun/communicator.h"
#include "trainrun/engine.h"
#include "trainrun/error.h"
#include "trainrun/torch.h"

namespace trainrun::torch {

void broadcast_parameters(const NamedTensors& named_parameters, int root) {
  ::torch::NoGradGuard no_grad;
  std::vector<Handle> handles;
  std::vector<::torch::Tensor> staged;  // non-contiguous parameters travel through a copy
  handles.reserve(named_parameters.size());
  for (const auto& item : named_parameters) {
    check_host_tensor(item.value(), item.key());
    ::torch::Tensor data = item.value().detach();
    if (!data.is_contiguous()) data = data.contiguous();
    staged.push_back(data);
    handles.push_back(broadcast_async("trainrun.parameter." + item.key(), tensor_view(data), root));
  }
  std::size_t i = 0;
  for (const auto& item : named_parameters) {
    synchronize(handles[i]);
    if (!item.value().is_contiguous()) item.value().detach().copy_(staged[i]);
    ++i;
  }
}

void broadcast_optimizer_state(::torch::optim::Optimizer& optimizer, int root) {
  // LibTorch's own serialization of the optimizer (every kind of optimizer,
  // its param groups and per-parameter state, matched by position), as
  // opaque bytes from root.
  const bool is_root = trainrun::init().rank() == root;
  std::string bytes;
  if (is_root) {
    std::ostringstream out;
    ::torch::save(optimizer, out);
    bytes = out.str();
  }
  ::torch::Tensor size = ::torch::tensor({static_cast<std::int64_t>(bytes.size())}, ::torch::kLong);
  synchronize(broadcast_async("trainrun.optimizer_state.size", tensor_view(size), root));
  bytes.resize(static_cast<std::size_t>(size.item<std::int64_t>()));
  ::torch::Tensor payload = ::torch::from_blob(bytes.data(), {static_cast<std::int64_t>(bytes.size())}, ::torch::kByte);
  synchronize(broadcast_async("trainrun.optimizer_state", tensor_view(payload), root));
  if (!is_root) {
    std::istringstream in(bytes);
    ::torch::load(optimizer, in);
  }
}

::torch::Tensor allreduce(const ::torch::Tensor& tensor, const std::string& name, ReduceOp op) {
  check_host_tensor(tensor, name);
  ::torch::Tensor result = tensor.detach().contiguous().clone();
  synchronize(allreduce_async(name, tensor_view(result), op));
  return result;
}

}  // namespace trainrun::torch
