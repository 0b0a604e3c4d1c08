// The C++ side of tests/bench/python_vs_ddp.py: the MNIST example's network
// at batch 32 per rank, trainrun::torch::DistributedOptimizer beside a local
// optimizer without communication, in the same job (rounds alternating), so
// that the per-step overhead of the C++ optimizer can be set beside the
// Python one's (python_vs_ddp.py prints the same columns).
//
//   trainrun --local -np 2 build/tests/bench/optimizer_overhead_bench [--steps 50] [--rounds 5]
//
// A benchmark, never a test: rank 0 prints a table (best round of each).
#include <torch/torch.h>
#include <trainrun/torch.h>
#include <trainrun/trainrun.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "examples/mnist/mnist_net.h"

namespace {

using Batches = std::vector<std::pair<torch::Tensor, torch::Tensor>>;

// Seconds for `steps` steps, the slowest rank's. `step` is the optimizer's.
template <typename Optimizer>
double timed_steps(mnist::Net& net, Optimizer& optimizer, const Batches& batches, int steps) {
  trainrun::torch::allreduce(torch::zeros(1), "bench.barrier", trainrun::ReduceOp::Sum);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) {
    const auto& [x, y] = batches[static_cast<std::size_t>(i) % batches.size()];
    optimizer.zero_grad();
    torch::nn::functional::cross_entropy(net.forward(x), y).backward();
    optimizer.step();
  }
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return trainrun::torch::allreduce(torch::tensor(elapsed), "bench.elapsed", trainrun::ReduceOp::Max).item<double>();
}

int int_option(int argc, char** argv, const char* name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return std::max(1, std::atoi(argv[i + 1]));
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = int_option(argc, argv, "--steps", 50), rounds = int_option(argc, argv, "--rounds", 5);
  const int batch = int_option(argc, argv, "--batch-size", 32);
  torch::set_num_threads(int_option(argc, argv, "--threads", 1));
  trainrun::Communicator& comm = trainrun::init();
  torch::manual_seed(static_cast<std::uint64_t>(comm.rank()));
  Batches batches;
  for (int i = 0; i < 8; ++i) batches.emplace_back(torch::rand({batch, 1, 28, 28}), torch::randint(0, 10, {batch}));

  torch::manual_seed(0);
  mnist::Net ours_net, local_net;
  torch::optim::SGD ours_sgd(ours_net.parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  torch::optim::SGD local_sgd(local_net.parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  trainrun::torch::DistributedOptimizer ours(ours_sgd, ours_net.named_parameters());
  timed_steps(ours_net, ours, batches, 5);  // warm up: allocations, engine cache
  timed_steps(local_net, local_sgd, batches, 5);
  std::map<std::string, double> best{{"ours", 1e30}, {"local", 1e30}};
  for (int r = 0; r < rounds; ++r) {
    best["ours"] = std::min(best["ours"], timed_steps(ours_net, ours, batches, steps));
    best["local"] = std::min(best["local"], timed_steps(local_net, local_sgd, batches, steps));
  }
  if (comm.rank() == 0) {
    const double images = static_cast<double>(steps) * batch * comm.size();
    const double local_ms = 1000 * best["local"] / steps;
    std::printf("%d ranks, batch %d/rank, %d steps x %d rounds; best round of each\n", comm.size(), batch, steps,
                rounds);
    std::printf("%-38s %10s %9s %17s\n", "", "images/s", "ms/step", "overhead ms/step");
    for (const auto& [name, label] : {std::pair<std::string, const char*>{"ours", "trainrun::torch DistributedOptimizer"},
                                      {"local", "local, no communication"}}) {
      const double ms = 1000 * best[name] / steps;
      std::printf("%-38s %10.0f %9.2f %17.2f\n", label, images / best[name], ms, ms - local_ms);
    }
  }
  trainrun::shutdown();
  return 0;
}
