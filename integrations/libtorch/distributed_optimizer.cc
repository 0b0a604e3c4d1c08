// DistributedOptimizer (see <trainrun/torch.h>). Each parameter's gradient
// accumulator (the autograd node that adds a new gradient into .grad) gets a
// post hook; when it has run backward_passes_per_step times the hook submits
// that gradient's allreduce to the engine, while backward goes on with the
// rest of the graph. The hooks run on the thread that called backward(),
// as do step() and synchronize(), so the state below needs no lock.
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "integrations/libtorch/tensor_view.h"
#include "trainrun/engine.h"
#include "trainrun/error.h"
#include "trainrun/torch.h"

namespace trainrun::torch {
namespace {

struct Gradient {
  std::string name;
  ::torch::Tensor parameter;
  std::shared_ptr<::torch::autograd::Node> accumulator;  // kept alive: autograd holds it weakly
  std::uintptr_t hook = 0;                               // the post hook, removed with the optimizer
  const void* guard = nullptr;                           // the pre hook (1.13 has no del_pre_hook: found by address)
  int passes = 0;                                        // backward passes since the last step
  std::optional<Handle> handle;                          // the allreduce in flight
  ::torch::Tensor wire;                                  // the 16-bit copy sent when compressing, reused
};

::torch::ScalarType wire_type(Compression compression) {
  return compression == Compression::Float16 ? ::torch::kHalf : ::torch::kBFloat16;
}

}  // namespace

struct DistributedOptimizer::Impl {
  ::torch::optim::Optimizer& optimizer;
  DistributedOptions options;
  std::vector<Gradient> gradients;
  double wait_seconds = 0;
  std::int64_t steps = 0;
  bool synchronized = false;  // synchronize() ran since the last backward

  Impl(::torch::optim::Optimizer& o, DistributedOptions opts) : optimizer(o), options(opts) {}

  // Called before the accumulator of gradients[index] adds a new gradient
  // into .grad: refuse while that .grad is being allreduced.
  void before_gradient(std::size_t index) {
    const Gradient& g = gradients[index];
    if (g.handle) {
      throw Error(Error::Code::InvalidArgument,
                  "DistributedOptimizer: gradient '" + g.name + "' produced again while its allreduce is in " +
                      "flight; call step() once per " + std::to_string(options.backward_passes_per_step) +
                      " backward pass(es)");
    }
  }

  // Called by the hook after the accumulator of gradients[index] ran.
  void on_gradient(std::size_t index) {
    synchronized = false;
    Gradient& g = gradients[index];
    if (++g.passes == options.backward_passes_per_step) submit(g);
  }

  void submit(Gradient& g) {
    ::torch::Tensor& grad = g.parameter.mutable_grad();
    if (!grad.defined()) grad = ::torch::zeros_like(g.parameter);  // unused this step: all ranks must agree
    if (!grad.is_contiguous()) grad = grad.contiguous();
    // k accumulated passes: their mean, so that k passes of B equal one of k*B.
    const double prescale = 1.0 / options.backward_passes_per_step;
    if (options.compression == Compression::None) {
      g.handle = allreduce_async(g.name, tensor_view(grad), options.op, prescale);
      return;
    }
    if (!g.wire.defined()) g.wire = ::torch::empty_like(grad, grad.options().dtype(wire_type(options.compression)));
    {
      ::torch::NoGradGuard no_grad;
      g.wire.copy_(prescale == 1.0 ? grad : grad * prescale);
    }
    g.handle = allreduce_async(g.name, tensor_view(g.wire), options.op);
  }

  void wait_all() {
    const auto start = std::chrono::steady_clock::now();
    for (Gradient& g : gradients) {
      if (!g.handle) submit(g);  // no gradient this step, or fewer passes than declared
    }
    for (std::size_t i = 0; i < gradients.size(); ++i) {
      Gradient& g = gradients[i];
      try {
        trainrun::synchronize(*g.handle);
      } catch (const Error&) {
        drain(i + 1);
        throw;
      }
      g.handle.reset();
      g.passes = 0;
      if (options.compression != Compression::None) {
        ::torch::NoGradGuard no_grad;
        g.parameter.mutable_grad().copy_(g.wire);
      }
    }
    wait_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    synchronized = true;
  }

  // After a failed allreduce (typically the engine stopped: a peer is gone),
  // waits out the others and forgets every handle, so that the optimizer can
  // be destroyed, or step again, after trainrun::shutdown() and init(): a
  // handle of the old engine must never reach the new one.
  void drain(std::size_t from) noexcept {
    for (std::size_t i = 0; i < gradients.size(); ++i) {
      Gradient& g = gradients[i];
      if (i >= from && g.handle) {
        try {
          trainrun::synchronize(*g.handle);
        } catch (...) {
        }
      }
      g.handle.reset();
      g.passes = 0;
    }
  }
};

namespace {

class GuardHook final : public ::torch::autograd::FunctionPreHook {
 public:
  GuardHook(DistributedOptimizer::Impl* impl, std::size_t index) : impl_(impl), index_(index) {}
  ::torch::autograd::variable_list operator()(const ::torch::autograd::variable_list& grads) override {
    impl_->before_gradient(index_);
    return grads;
  }

 private:
  DistributedOptimizer::Impl* impl_;
  std::size_t index_;
};

class AllreduceHook final : public ::torch::autograd::FunctionPostHook {
 public:
  AllreduceHook(DistributedOptimizer::Impl* impl, std::size_t index) : impl_(impl), index_(index) {}
  ::torch::autograd::variable_list operator()(const ::torch::autograd::variable_list& outputs,
                                              const ::torch::autograd::variable_list&) override {
    impl_->on_gradient(index_);
    return outputs;
  }

 private:
  DistributedOptimizer::Impl* impl_;
  std::size_t index_;
};

}  // namespace

DistributedOptimizer::DistributedOptimizer(::torch::optim::Optimizer& optimizer, const NamedTensors& named_parameters,
                                           DistributedOptions options)
    : impl_(std::make_unique<Impl>(optimizer, options)) {
  if (options.backward_passes_per_step < 1) {
    throw Error(Error::Code::InvalidArgument, "DistributedOptimizer: backward_passes_per_step must be >= 1");
  }
  impl_->gradients.reserve(named_parameters.size());
  for (const auto& item : named_parameters) {
    const ::torch::Tensor& parameter = item.value();
    if (!parameter.requires_grad()) continue;
    check_host_tensor(parameter, item.key());
    Gradient g;
    g.name = item.key();
    g.parameter = parameter;
    g.accumulator = ::torch::autograd::impl::grad_accumulator(parameter);
    impl_->gradients.push_back(std::move(g));
  }
  for (std::size_t i = 0; i < impl_->gradients.size(); ++i) {
    Gradient& g = impl_->gradients[i];
    auto guard = std::make_unique<GuardHook>(impl_.get(), i);
    g.guard = guard.get();
    g.accumulator->add_pre_hook(std::move(guard));
    g.hook = g.accumulator->add_post_hook(std::make_unique<AllreduceHook>(impl_.get(), i));
  }
}

DistributedOptimizer::~DistributedOptimizer() {
  for (Gradient& g : impl_->gradients) {
    g.accumulator->del_post_hook(g.hook);
    auto& pre = g.accumulator->pre_hooks();
    pre.erase(std::remove_if(pre.begin(), pre.end(), [&](const auto& h) { return h.get() == g.guard; }), pre.end());
    if (g.handle) {
      try {
        trainrun::synchronize(*g.handle);  // never leave the engine writing into a freed gradient
      } catch (const Error&) {
      }
    }
  }
}

void DistributedOptimizer::zero_grad() { impl_->optimizer.zero_grad(); }

void DistributedOptimizer::synchronize() { impl_->wait_all(); }

void DistributedOptimizer::step() {
  if (!impl_->synchronized) impl_->wait_all();
  impl_->synchronized = false;
  impl_->optimizer.step();
  ++impl_->steps;
}

::torch::optim::Optimizer& DistributedOptimizer::optimizer() { return impl_->optimizer; }
double DistributedOptimizer::wait_seconds() const { return impl_->wait_seconds; }
std::int64_t DistributedOptimizer::steps() const { return impl_->steps; }

}  // namespace trainrun::torch
