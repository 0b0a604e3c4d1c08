// <trainrun/torch.h> on every rank of a real job (trainrun --local -np N):
// identical parameters after every step, broadcast of parameters and
// optimizer state, local gradient accumulation, compression, metrics.
// CHECK, never REQUIRE, where a rank could skip a collective.
#include <torch/torch.h>
#include <trainrun/torch.h>
#include <trainrun/trainrun.h>
// LibTorch brings glog's CHECK macros, which abort; these tests want doctest's.
#undef CHECK
#undef CHECK_EQ
#undef CHECK_NE
#undef CHECK_LT
#undef CHECK_GT
#undef CHECK_LE
#undef CHECK_GE
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "tests/conformance/every_rank_main.h"

namespace tt = trainrun::torch;

namespace {

trainrun::Communicator* g_comm = nullptr;

struct Small : torch::nn::Module {
  Small() {
    a = register_module("a", torch::nn::Linear(12, 16));
    b = register_module("b", torch::nn::Linear(16, 3));
    unused = register_parameter("unused", torch::zeros({4}));  // never gets a gradient
  }
  torch::Tensor forward(const torch::Tensor& x) { return b(torch::tanh(a(x))); }
  torch::nn::Linear a{nullptr}, b{nullptr};
  torch::Tensor unused;
};

// Equal on every rank exactly when the parameters are bit-identical.
bool identical_everywhere(torch::nn::Module& m, const std::string& tag) {
  std::int64_t sum = 0;
  for (const auto& p : m.parameters())
    sum += p.detach().view(torch::kInt32).to(torch::kLong).mul(131).sum().item<std::int64_t>();
  const auto t = torch::tensor(sum);
  const auto high = tt::allreduce(t, "check.max." + tag, trainrun::ReduceOp::Max);
  const auto low = tt::allreduce(t, "check.min." + tag, trainrun::ReduceOp::Min);
  return high.equal(low);
}

// A batch that differs on every rank.
std::pair<torch::Tensor, torch::Tensor> batch(int step, std::int64_t n = 8) {
  torch::manual_seed(1000 + 17 * g_comm->rank() + step);
  return {torch::randn({n, 12}), torch::randint(0, 3, {n}, torch::kLong)};
}

torch::Tensor loss_of(Small& m, const std::pair<torch::Tensor, torch::Tensor>& b) {
  return torch::nn::functional::cross_entropy(m.forward(b.first), b.second);
}

}  // namespace

TEST_CASE("different seeds are overridden by broadcast_parameters") {
  torch::manual_seed(42 + g_comm->rank());
  Small m;
  if (g_comm->size() > 1) CHECK_FALSE(identical_everywhere(m, "before"));
  tt::broadcast_parameters(m.named_parameters(), 0);
  CHECK(identical_everywhere(m, "after"));
}

TEST_CASE("parameters are bit-identical on every rank after every step, for every compression") {
  for (auto compression : {tt::Compression::None, tt::Compression::Float16, tt::Compression::BFloat16}) {
    torch::manual_seed(7 + g_comm->rank());
    Small m;
    torch::optim::Adam adam(m.parameters(), 1e-2);
    tt::broadcast_parameters(m.named_parameters(), 0);
    tt::DistributedOptimizer opt(adam, m.named_parameters(), {trainrun::ReduceOp::Average, compression, 1});
    for (int step = 0; step < 20; ++step) {
      opt.zero_grad();
      loss_of(m, batch(step)).backward();
      opt.step();
      CHECK_MESSAGE(identical_everywhere(m, "step"),
                    "step " << step << " compression " << static_cast<int>(compression));
    }
    CHECK(opt.steps() == 20);
  }
}

TEST_CASE("gradients are the average over ranks; fp16 on the wire stays close") {
  torch::manual_seed(3);
  Small exact, compressed;
  tt::broadcast_parameters(exact.named_parameters(), 0);
  {
    torch::NoGradGuard g;
    for (std::size_t i = 0; i < exact.parameters().size(); ++i) compressed.parameters()[i].copy_(exact.parameters()[i]);
  }
  torch::optim::SGD s1(exact.parameters(), 0.1), s2(compressed.parameters(), 0.1);
  tt::DistributedOptimizer o1(s1, exact.named_parameters());
  tt::DistributedOptimizer o2(s2, compressed.named_parameters(),
                              {trainrun::ReduceOp::Average, tt::Compression::Float16, 1});
  const auto b = batch(0);
  loss_of(exact, b).backward();
  o1.synchronize();
  loss_of(compressed, b).backward();
  o2.synchronize();
  // The average of every rank's own gradient, computed here from all batches.
  Small reference;
  {
    torch::NoGradGuard g;
    for (std::size_t i = 0; i < reference.parameters().size(); ++i)
      reference.parameters()[i].copy_(exact.parameters()[i]);
  }
  const auto mine = torch::autograd::grad({loss_of(reference, b)}, {reference.a->weight})[0];
  const auto average = tt::allreduce(mine, "reference.grad", trainrun::ReduceOp::Average);
  CHECK(torch::allclose(exact.a->weight.grad(), average, 1e-6, 1e-7));
  CHECK(torch::allclose(compressed.a->weight.grad(), average, 1e-2, 1e-3));
  CHECK(exact.unused.grad().defined());  // zeros were allreduced for it
  CHECK(exact.unused.grad().abs().sum().item<float>() == 0.0f);
}

TEST_CASE("backward_passes_per_step=2 equals one step on a doubled batch") {
  torch::manual_seed(11);
  Small one, two;
  tt::broadcast_parameters(one.named_parameters(), 0);
  {
    torch::NoGradGuard g;
    for (std::size_t i = 0; i < one.parameters().size(); ++i) two.parameters()[i].copy_(one.parameters()[i]);
  }
  torch::optim::SGD s1(one.parameters(), 0.5), s2(two.parameters(), 0.5);
  tt::DistributedOptimizer doubled(s1, one.named_parameters());
  tt::DistributedOptimizer accumulated(s2, two.named_parameters(),
                                       {trainrun::ReduceOp::Average, tt::Compression::None, 2});
  const auto b = batch(5, 16);
  doubled.zero_grad();
  loss_of(one, b).backward();
  doubled.step();
  accumulated.zero_grad();
  loss_of(two, {b.first.slice(0, 0, 8), b.second.slice(0, 0, 8)}).backward();
  loss_of(two, {b.first.slice(0, 8, 16), b.second.slice(0, 8, 16)}).backward();
  accumulated.step();
  for (std::size_t i = 0; i < one.parameters().size(); ++i) {
    CHECK(torch::allclose(one.parameters()[i], two.parameters()[i], 1e-5, 1e-6));
  }
}

TEST_CASE("broadcast_optimizer_state copies momentum and step counts from the root") {
  torch::manual_seed(5);
  Small m;
  tt::broadcast_parameters(m.named_parameters(), 0);
  torch::optim::Adam adam(m.parameters(), 1e-2);
  // Rank 0 alone takes a few steps: its Adam state (moments, step) differs.
  if (g_comm->rank() == 0) {
    for (int step = 0; step < 3; ++step) {
      adam.zero_grad();
      loss_of(m, batch(step)).backward();
      adam.step();
    }
  }
  tt::broadcast_parameters(m.named_parameters(), 0);
  tt::broadcast_optimizer_state(adam, 0);
  // Adam's state per parameter (in parameter order; the map is keyed by
  // each process's own tensor addresses): moments and step count.
  std::int64_t sum = 0;
  int states = 0;
  for (const auto& p : m.parameters()) {
    auto it = adam.state().find(c10::guts::to_string(p.unsafeGetTensorImpl()));
    if (it == adam.state().end()) continue;
    auto& s = static_cast<torch::optim::AdamParamState&>(*it->second);
    sum += s.step() * 1000003 + s.exp_avg().view(torch::kInt32).to(torch::kLong).sum().item<std::int64_t>() +
           s.exp_avg_sq().view(torch::kInt32).to(torch::kLong).sum().item<std::int64_t>();
    ++states;
  }
  CHECK(states == 4);  // a.weight, a.bias, b.weight, b.bias; `unused` never had a gradient
  const auto t = torch::tensor(sum);
  CHECK(tt::allreduce(t, "state.max", trainrun::ReduceOp::Max)
            .equal(tt::allreduce(t, "state.min", trainrun::ReduceOp::Min)));
  // And training goes on identically from there.
  tt::DistributedOptimizer opt(adam, m.named_parameters());
  opt.zero_grad();
  loss_of(m, batch(9)).backward();
  opt.step();
  CHECK(identical_everywhere(m, "after-state"));
}

// Momentum buffers of SGD, summed as bits: equal exactly when identical.
std::int64_t momentum_bits(torch::optim::SGD& sgd, Small& m) {
  std::int64_t sum = 0;
  for (const auto& p : m.parameters()) {
    auto it = sgd.state().find(c10::guts::to_string(p.unsafeGetTensorImpl()));
    if (it == sgd.state().end()) continue;
    auto& s = static_cast<torch::optim::SGDParamState&>(*it->second);
    sum += s.momentum_buffer().view(torch::kInt32).to(torch::kLong).sum().item<std::int64_t>();
  }
  return sum;
}

std::int64_t parameter_bits(Small& m) {
  std::int64_t sum = 0;
  for (const auto& p : m.parameters())
    sum += p.detach().view(torch::kInt32).to(torch::kLong).mul(131).sum().item<std::int64_t>();
  return sum;
}

void train_step(tt::DistributedOptimizer& opt, Small& m, int step) {
  opt.zero_grad();
  loss_of(m, batch(step)).backward();
  opt.step();
}

TEST_CASE("an elastic State restores the module and optimizer state of its last commit") {
  Small m;
  torch::optim::SGD sgd(m.parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  trainrun::elastic::State state;
  tt::add_module(state, "model", m);
  tt::add_optimizer(state, "optimizer", sgd);
  state.sync();  // rank 0's initial parameters everywhere
  CHECK(identical_everywhere(m, "elastic-sync"));
  tt::DistributedOptimizer opt(sgd, m.named_parameters());
  train_step(opt, m, 1);
  state.commit();
  const std::int64_t params = parameter_bits(m), momentum = momentum_bits(sgd, m);
  train_step(opt, m, 2);
  CHECK(parameter_bits(m) != params);
  state.restore();
  CHECK(parameter_bits(m) == params);
  CHECK(momentum_bits(sgd, m) == momentum);
  train_step(opt, m, 3);  // the optimizer still drives the restored parameters
  CHECK(parameter_bits(m) != params);
  CHECK(identical_everywhere(m, "elastic-after"));
}

TEST_CASE("a DistributedOptimizer whose allreduces failed can go, and a new one work after init") {
  Small m;
  tt::broadcast_parameters(m.named_parameters(), 0);
  torch::optim::SGD sgd(m.parameters(), 0.1);
  {
    tt::DistributedOptimizer opt(sgd, m.named_parameters());
    opt.zero_grad();
    // Allreduces in flight. A faster peer's shutdown() below may stop this
    // rank's engine while its backward still submits: that submission fails
    // ("the engine was shut down by rank N"), as it should; the optimizer
    // must cope with that too (this race made the test fail 1 run in ~8).
    try {
      loss_of(m, batch(1)).backward();
    } catch (const std::exception& e) {
      CHECK(std::string(e.what()).find("shut down") != std::string::npos);
    }
    trainrun::shutdown();  // ... when the engine goes (as in an elastic re-form)
    CHECK_THROWS_AS(opt.step(), trainrun::Error);
    g_comm = &trainrun::init();
  }
  tt::DistributedOptimizer opt(sgd, m.named_parameters());
  train_step(opt, m, 2);
  CHECK(identical_everywhere(m, "after-reinit"));
}

TEST_CASE("misuse is an error, not a hang or a wrong result") {
  Small m;
  tt::broadcast_parameters(m.named_parameters(), 0);
  torch::optim::SGD sgd(m.parameters(), 0.1);
  CHECK_THROWS_AS(
      tt::DistributedOptimizer(sgd, m.named_parameters(), {trainrun::ReduceOp::Average, tt::Compression::None, 0}),
      trainrun::Error);
  tt::DistributedOptimizer opt(sgd, m.named_parameters());
  opt.zero_grad();
  loss_of(m, batch(1)).backward();
  bool threw = false;
  try {
    loss_of(m, batch(2)).backward();  // a second pass before step()
  } catch (const trainrun::Error& e) {
    threw = true;
    CHECK(std::string(e.what()).find("call step() once per 1 backward pass") != std::string::npos);
    CHECK(e.code() == trainrun::Error::Code::InvalidArgument);
  } catch (const c10::Error& e) {
    threw = std::string(e.what()).find("call step() once per 1 backward pass") != std::string::npos;
  }
  CHECK(threw);
  opt.step();
  CHECK_THROWS_AS(tt::allreduce(torch::zeros({2}, torch::kComplexFloat), "complex"), trainrun::Error);
}

int main(int argc, char** argv) {
  torch::set_num_threads(1);
  return trainrun::test::run_on_every_rank(argc, argv, "torch_multirank", g_comm);
}
