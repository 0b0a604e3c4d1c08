// The C++ side of tests/bench/python_vs_ddp.py: the MNIST example's network
// at batch 32 per rank, trainrun::torch::DistributedOptimizer beside a local
// optimizer without communication, in the same job (rounds alternating,
// median step of each, as python_vs_ddp.py measures), so
// that the per-step overhead of the C++ optimizer can be set beside the
// Python one's (python_vs_ddp.py prints the same columns).
//
//   trainrun --local -np 2 build/tests/bench/optimizer_overhead_bench [--steps 50] [--rounds 5]
//
// A benchmark, never a test: rank 0 prints a table.
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

// Appends the seconds of each of `steps` steps on this rank to `seconds`.
template <typename Optimizer>
void timed_steps(mnist::Net& net, Optimizer& optimizer, const Batches& batches, int steps,
                 std::vector<double>& seconds) {
  trainrun::torch::allreduce(torch::zeros(1), "bench.barrier", trainrun::ReduceOp::Sum);
  for (int i = 0; i < steps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    const auto& [x, y] = batches[static_cast<std::size_t>(i) % batches.size()];
    optimizer.zero_grad();
    torch::nn::functional::cross_entropy(net.forward(x), y).backward();
    optimizer.step();
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
}

// The median step, the slowest rank's.
double median_step(std::vector<double> seconds, const std::string& name) {
  std::nth_element(seconds.begin(), seconds.begin() + seconds.size() / 2, seconds.end());
  return trainrun::torch::allreduce(torch::tensor(seconds[seconds.size() / 2]), "bench." + name,
                                    trainrun::ReduceOp::Max)
      .item<double>();
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
  std::map<std::string, std::vector<double>> seconds;
  timed_steps(ours_net, ours, batches, 5, seconds["warm-up"]);  // allocations, engine cache
  timed_steps(local_net, local_sgd, batches, 5, seconds["warm-up"]);
  for (int r = 0; r < rounds; ++r) {
    timed_steps(ours_net, ours, batches, steps, seconds["ours"]);
    timed_steps(local_net, local_sgd, batches, steps, seconds["local"]);
  }
  const std::map<std::string, double> median{{"ours", median_step(seconds["ours"], "ours")},
                                             {"local", median_step(seconds["local"], "local")}};
  if (comm.rank() == 0) {
    const double images = static_cast<double>(batch) * comm.size();
    const double local_ms = 1000 * median.at("local");
    std::printf("%d ranks, batch %d/rank, %d steps x %d rounds; median step of each\n", comm.size(), batch, steps,
                rounds);
    std::printf("%-38s %10s %9s %17s\n", "", "images/s", "ms/step", "overhead ms/step");
    for (const auto& [name, label] :
         {std::pair<std::string, const char*>{"ours", "trainrun::torch DistributedOptimizer"},
          {"local", "local, no communication"}}) {
      const double ms = 1000 * median.at(name);
      std::printf("%-38s %10.0f %9.2f %17.2f\n", label, images / median.at(name), ms, ms - local_ms);
    }
  }
  trainrun::shutdown();
  return 0;
}
