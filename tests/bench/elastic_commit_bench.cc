// elastic_commit_bench: what State::commit() costs a training loop, for the
// MNIST example's network (examples/mnist/mnist_net.h) and its SGD with
// momentum: every part saved to bytes in memory (LibTorch archives), plus,
// in an elastic job, one 4-byte allreduce. Single process; prints the
// snapshot size and the median and 90th percentile over 50 commits.
//
//   ./build/tests/bench/elastic_commit_bench
#include <torch/torch.h>
#include <trainrun/torch.h>
#include <trainrun/trainrun.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <vector>

#include "examples/mnist/mnist_net.h"

namespace {

constexpr int kCommits = 50;

// Snapshot bytes: what one commit keeps in memory.
std::size_t snapshot_bytes(mnist::Net& net, torch::optim::Optimizer& optimizer) {
  torch::serialize::OutputArchive model, state;
  net.save(model);
  optimizer.save(state);
  std::ostringstream a, b;
  model.save_to(a);
  state.save_to(b);
  return a.str().size() + b.str().size();
}

}  // namespace

int main() {
  torch::set_num_threads(1);
  trainrun::init();
  torch::manual_seed(1);
  mnist::Net net;
  torch::optim::SGD sgd(net.parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  // One step, so that the momentum buffers exist and are saved too.
  sgd.zero_grad();
  torch::nn::functional::cross_entropy(net.forward(torch::randn({32, 1, 28, 28})),
                                       torch::randint(0, 10, {32}, torch::kLong))
      .backward();
  sgd.step();

  trainrun::elastic::State state;
  std::int64_t epoch = 0, batch = 0;
  trainrun::torch::add_module(state, "model", net);
  trainrun::torch::add_optimizer(state, "optimizer", sgd);
  state.add_value("epoch", epoch);
  state.add_value("batch", batch);

  std::vector<double> micros;
  for (int i = 0; i < kCommits; ++i) {
    ++batch;
    const auto start = std::chrono::steady_clock::now();
    state.commit();
    micros.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(micros.begin(), micros.end());
  std::printf("%-28s %10s %12s %10s\n", "state", "bytes", "median us", "p90 us");
  std::printf("%-28s %10zu %12.1f %10.1f\n", "mnist Net + SGD momentum",
              snapshot_bytes(net, sgd) + 2 * sizeof(std::int64_t), micros[micros.size() / 2],
              micros[micros.size() * 9 / 10]);
  trainrun::shutdown();
  return 0;
}
