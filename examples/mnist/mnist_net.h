// The MNIST example's network (the same layers as examples/pytorch/mnist.py):
// two 5x5 convolutions with max pooling, then two linear layers; ~21k
// parameters in 8 tensors.
#pragma once

#include <torch/torch.h>

namespace mnist {

struct Net : torch::nn::Module {
  Net() {
    conv1 = register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 8, 5)));
    conv2 = register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(8, 16, 5)));
    fc1 = register_module("fc1", torch::nn::Linear(16 * 4 * 4, 64));
    fc2 = register_module("fc2", torch::nn::Linear(64, 10));
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::max_pool2d(torch::relu(conv1(x)), 2);
    x = torch::max_pool2d(torch::relu(conv2(x)), 2);
    return fc2(torch::relu(fc1(x.flatten(1))));
  }
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};

}  // namespace mnist
