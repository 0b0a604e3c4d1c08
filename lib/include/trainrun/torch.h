// LibTorch integration: Horovod's workflow for C++ training programs.
//
//   trainrun::init();
//   Net net;  torch::optim::SGD sgd(net.parameters(), lr * comm.size());
//   trainrun::torch::broadcast_parameters(net.named_parameters(), 0);
//   trainrun::torch::DistributedOptimizer opt(sgd, net.named_parameters());
//   trainrun::torch::broadcast_optimizer_state(sgd, 0);
//   for (auto batch : shard) {
//     opt.zero_grad();
//     loss(net.forward(batch)).backward();   // each gradient's allreduce starts here
//     opt.step();                             // waits for them, then steps
//   }
//
// Every call here is collective: every rank makes the same calls in the
// same order. Parameters and gradients are dense, contiguous CPU tensors
// (Debian's LibTorch has no CUDA; a CUDA tensor is an Error of code
// Unsupported). Built and installed when LibTorch is found (-Dtorch=auto);
// link with `pkg-config --libs trainrun-torch`.
#pragma once

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>
#include <torch/ordered_dict.h>
#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "trainrun/elastic.h"
#include "trainrun/sampler.h"
#include "trainrun/types.h"

namespace trainrun::torch {

using NamedTensors = ::torch::OrderedDict<std::string, ::torch::Tensor>;

// How gradients travel: as they are, or cast to 16 bits for the wire (the
// reduction accumulates each pair in float; the result is cast back).
enum class Compression { None, Float16, BFloat16 };

struct DistributedOptions {
  ReduceOp op = ReduceOp::Average;
  Compression compression = Compression::None;
  // Gradients accumulate locally over this many backward passes; the
  // allreduce starts on the last one and the result is their mean, so k
  // passes of batch B equal one pass of batch k*B (with a mean loss).
  int backward_passes_per_step = 1;
};

// Wraps any torch::optim::Optimizer. A hook on every parameter's gradient
// accumulator starts that gradient's allreduce (through the engine, named by
// the parameter's name) as soon as backward has produced it, so communication
// overlaps the rest of backward; step() waits for all of them, then steps.
// Not thread-safe; the wrapped optimizer must outlive it.
class DistributedOptimizer {
 public:
  DistributedOptimizer(::torch::optim::Optimizer& optimizer, const NamedTensors& named_parameters,
                       DistributedOptions options = {});
  ~DistributedOptimizer();
  DistributedOptimizer(const DistributedOptimizer&) = delete;
  DistributedOptimizer& operator=(const DistributedOptimizer&) = delete;

  void zero_grad();
  // Waits for every gradient's allreduce (submitting those whose parameter
  // got no gradient this step, so all ranks agree), then steps. With
  // backward_passes_per_step = k, call it once per k backward passes.
  void step();
  // Waits for the allreduces without stepping (e.g. to clip gradients).
  void synchronize();

  ::torch::optim::Optimizer& optimizer();
  // Seconds step()/synchronize() spent waiting for allreduces, and the
  // number of steps, since construction: compute vs communication split.
  double wait_seconds() const;
  std::int64_t steps() const;

  struct Impl;  // defined in integrations/libtorch/distributed_optimizer.cc

 private:
  std::unique_ptr<Impl> impl_;
};

// Root's parameter values replace every other rank's, in place.
void broadcast_parameters(const NamedTensors& named_parameters, int root);
// Root's optimizer state (momentum buffers, step counts, learning rates, ...)
// replaces every other rank's; works for every LibTorch optimizer.
void broadcast_optimizer_state(::torch::optim::Optimizer& optimizer, int root);
// A reduced copy of `tensor` (metrics: loss, accuracy counts). `name` must be
// the same on every rank and not in flight.
::torch::Tensor allreduce(const ::torch::Tensor& tensor, const std::string& name, ReduceOp op = ReduceOp::Average);

// Elastic training (<trainrun/elastic.h>): the module's parameters and
// buffers, or the optimizer's state (momentum, step counts, learning rates),
// as a part of `state`, saved with LibTorch's serialization. Loading copies
// into the existing tensors: optimizers built on the module stay valid.
// Build the DistributedOptimizer inside the function elastic::run calls, so
// that each generation gets a fresh one; the learning rate restored with
// the optimizer is the committed one (rescale it for the new size after).
void add_module(elastic::State& state, std::string name, ::torch::nn::Module& module);
void add_optimizer(elastic::State& state, std::string name, ::torch::optim::Optimizer& optimizer);

}  // namespace trainrun::torch
