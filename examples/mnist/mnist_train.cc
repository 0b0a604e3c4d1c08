// mnist_train: a LibTorch CNN trained on real MNIST digits by every rank of
// a job, Horovod-style: each rank trains on its shard, the learning rate is
// scaled by the number of ranks, gradients are averaged by
// DistributedOptimizer while backward runs, rank 0 reports and checkpoints.
//
//   trainrun --local -np 4 ./build/examples/mnist/mnist_train
//
// Options (mnist_train --help lists them): --data FILE (default: ./data/mnist/mnist.bin, then the
// source tree's, then the installed copy: found from any directory), --epochs N (3), --batch-size B
// per rank (32), --lr X before scaling (0.025), --momentum X (0.9), --seed S,
// --checkpoint FILE (mnist-checkpoint.pt), --resume, --compression
// none|fp16|bf16, --backward-passes K, --check-identical (after every step,
// fail unless every rank holds the same parameters), --no-progress,
// --threads T (LibTorch threads per rank; default: cores / local ranks).
// --elastic: train under trainrun::elastic::run (trainrun --min-np/--max-np,
// see trainrun(1)): ranks may die or join; the model, optimizer, epoch and
// position in the epoch are committed every --commit-every N batches (20)
// and training resumes from the last commit with the new number of ranks.
#include <torch/torch.h>
#include <unistd.h>
#include <trainrun/torch.h>
#include <trainrun/trainrun.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>

#include "mnist_data.h"
#include "mnist_options.h"
#include "mnist_net.h"

namespace {

using mnist::Config;
using mnist::Net;

// Images as float [N,1,28,28] in [0,1] and labels as int64.
std::pair<torch::Tensor, torch::Tensor> tensors(const mnist::Digits& d) {
  const auto n = static_cast<std::int64_t>(d.size());
  auto x = torch::from_blob(const_cast<std::uint8_t*>(d.pixels.data()), {n, 1, 28, 28}, torch::kUInt8)
               .to(torch::kFloat32)
               .div_(255.0);
  auto y = torch::from_blob(const_cast<std::uint8_t*>(d.labels.data()), {n}, torch::kUInt8).to(torch::kLong);
  return {x, y};
}

// Bits of every parameter folded into one number: equal on every rank
// exactly when the parameters are bit-identical (as far as a checksum can).
std::int64_t checksum(Net& net) {
  std::int64_t sum = 0;
  for (const auto& p : net.parameters()) {
    sum += p.detach().contiguous().view(torch::kInt32).to(torch::kLong).mul(31).sum().item<std::int64_t>();
  }
  return sum;
}

// Held-out accuracy over all ranks: each evaluates a contiguous slice.
double evaluate(Net& net, const torch::Tensor& x, const torch::Tensor& y, int rank, int size) {
  torch::NoGradGuard no_grad;
  net.eval();
  const std::int64_t n = x.size(0), begin = n * rank / size, end = n * (rank + 1) / size;
  const auto correct = net.forward(x.slice(0, begin, end)).argmax(1).eq(y.slice(0, begin, end)).sum();
  const auto counts = torch::stack({correct.to(torch::kLong), torch::tensor(end - begin, torch::kLong)});
  const auto total = trainrun::torch::allreduce(counts, "mnist.accuracy", trainrun::ReduceOp::Sum);
  net.train();
  return static_cast<double>(total[0].item<std::int64_t>()) / static_cast<double>(total[1].item<std::int64_t>());
}

void save_checkpoint(Net& net, torch::optim::Optimizer& optimizer, int epoch, const std::string& path) {
  torch::serialize::OutputArchive archive;
  net.save(archive);
  torch::serialize::OutputArchive optimizer_archive;
  optimizer.save(optimizer_archive);
  archive.write("optimizer", optimizer_archive);
  archive.write("epoch", torch::tensor(static_cast<std::int64_t>(epoch)));
  // Whole or not at all, and never through a link another user planted at
  // a predictable name: a temporary file created exclusively (mkstemp) in
  // the checkpoint's folder, then renamed over it.
  std::ostringstream bytes;
  archive.save_to(bytes);
  const std::string data = bytes.str();
  std::string temporary = path + ".XXXXXX";
  const int fd = ::mkstemp(temporary.data());
  bool written = fd >= 0;
  for (std::size_t done = 0; written && done < data.size();) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    written = n > 0;
    if (written) done += static_cast<std::size_t>(n);
  }
  const int error = errno;
  if (fd >= 0 && ::close(fd) != 0) written = false;
  if (!written || std::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(written ? errno : error);
    if (fd >= 0) ::unlink(temporary.c_str());
    throw std::runtime_error("cannot write checkpoint " + path + ": " + why);
  }
}

int load_checkpoint(Net& net, torch::optim::Optimizer& optimizer, const std::string& path) {
  torch::serialize::InputArchive archive;
  archive.load_from(path);
  net.load(archive);
  torch::serialize::InputArchive optimizer_archive;
  archive.read("optimizer", optimizer_archive);
  optimizer.load(optimizer_archive);
  torch::Tensor epoch;
  archive.read("epoch", epoch);
  return static_cast<int>(epoch.item<std::int64_t>());
}

void set_threads(const Config& c, const trainrun::Communicator& comm) {
  const int threads = c.threads > 0
                          ? c.threads
                          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / comm.local_size());
  torch::set_num_threads(threads);
}

int train(const Config& c) {
  trainrun::Communicator& comm = trainrun::init();
  const int rank = comm.rank(), size = comm.size();
  set_threads(c, comm);

  const mnist::Split split = mnist::load(c.data);
  const auto [train_x, train_y] = tensors(split.train);
  const auto [test_x, test_y] = tensors(split.held_out);

  // Different seeds on purpose: broadcast_parameters makes rank 0's win.
  torch::manual_seed(c.seed + static_cast<std::uint64_t>(rank));
  Net net;
  const double lr = c.lr * size;
  torch::optim::SGD sgd(net.parameters(), torch::optim::SGDOptions(lr).momentum(c.momentum));
  int first_epoch = 0;
  if (c.resume && rank == 0) first_epoch = load_checkpoint(net, sgd, c.checkpoint);
  trainrun::torch::broadcast_parameters(net.named_parameters(), 0);
  trainrun::torch::broadcast_optimizer_state(sgd, 0);
  first_epoch = static_cast<int>(trainrun::torch::allreduce(torch::tensor(static_cast<std::int64_t>(first_epoch)),
                                                            "mnist.first_epoch", trainrun::ReduceOp::Max)
                                     .item<std::int64_t>());
  trainrun::torch::DistributedOptimizer optimizer(sgd, net.named_parameters(),
                                                  {trainrun::ReduceOp::Average, c.compression, c.backward_passes});

  trainrun::DistributedSampler sampler(split.train.size(), rank, size, true, c.seed);
  const std::int64_t steps_per_epoch = static_cast<std::int64_t>(sampler.size()) / (c.batch_size * c.backward_passes);
  if (rank == 0) {
    std::printf(
        "mnist: %d rank(s) (%s), %zu training digits (%zu per rank), %zu held out; batch %d per rank, lr %g%s%s\n",
        size, comm.backend_name().c_str(), split.train.size(), sampler.size(), split.held_out.size(), c.batch_size, lr,
        first_epoch ? ", resuming after epoch " : "", first_epoch ? std::to_string(first_epoch).c_str() : "");
    std::fflush(stdout);
  }
  double accuracy = 0;
  for (int epoch = first_epoch; epoch < c.epochs; ++epoch) {
    sampler.set_epoch(static_cast<std::uint64_t>(epoch));
    const std::vector<std::size_t> mine = sampler.indices();
    const auto order = torch::tensor(std::vector<std::int64_t>(mine.begin(), mine.end()));
    const auto start = std::chrono::steady_clock::now();
    const double wait_before = optimizer.wait_seconds();
    double loss_sum = 0;
    for (std::int64_t step = 0; step < steps_per_epoch; ++step) {
      optimizer.zero_grad();
      for (int pass = 0; pass < c.backward_passes; ++pass) {
        const std::int64_t first = (step * c.backward_passes + pass) * c.batch_size;
        const auto batch = order.slice(0, first, first + c.batch_size);
        auto loss = torch::nn::functional::cross_entropy(net.forward(train_x.index_select(0, batch)),
                                                         train_y.index_select(0, batch));
        loss.backward();
        loss_sum += loss.item<double>() / c.backward_passes;
      }
      optimizer.step();
      if (c.check_identical) {
        const auto sum = torch::tensor(checksum(net));
        const auto high = trainrun::torch::allreduce(sum, "mnist.checksum.max", trainrun::ReduceOp::Max);
        const auto low = trainrun::torch::allreduce(sum, "mnist.checksum.min", trainrun::ReduceOp::Min);
        if (!high.equal(low)) {
          std::fprintf(stderr, "mnist: rank %d: parameters differ between ranks after epoch %d step %lld\n", rank,
                       epoch + 1, static_cast<long long>(step + 1));
          return 3;
        }
      }
      if (rank == 0 && c.progress && (step % 10 == 9 || step + 1 == steps_per_epoch)) {
        std::printf("epoch %d/%d: step %lld/%lld, loss %.4f\r", epoch + 1, c.epochs, static_cast<long long>(step + 1),
                    static_cast<long long>(steps_per_epoch), loss_sum / static_cast<double>(step + 1));
        std::fflush(stdout);
      }
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double waited = optimizer.wait_seconds() - wait_before;
    const double loss = trainrun::torch::allreduce(torch::tensor(loss_sum / static_cast<double>(steps_per_epoch)),
                                                   "mnist.loss", trainrun::ReduceOp::Average)
                            .item<double>();
    accuracy = evaluate(net, test_x, test_y, rank, size);
    const double images = static_cast<double>(steps_per_epoch * c.batch_size * c.backward_passes * size);
    if (rank == 0) {
      std::printf(
          "epoch %d/%d: loss %.4f, held-out accuracy %.2f%% (%lld digits), %.2f s, %.0f images/s, "
          "waiting for allreduce %.0f%% of the time\n",
          epoch + 1, c.epochs, loss, 100 * accuracy, static_cast<long long>(test_x.size(0)), seconds, images / seconds,
          100 * waited / seconds);
      save_checkpoint(net, sgd, epoch + 1, c.checkpoint);
      std::fflush(stdout);
    }
  }
  if (rank == 0) {
    std::printf("mnist: held-out accuracy %.2f%% after %d epoch(s); checkpoint %s\n", 100 * accuracy, c.epochs,
                c.checkpoint.c_str());
  }
  trainrun::shutdown();
  return 0;
}

// What an elastic run keeps across re-forms besides the model and optimizer:
// the epoch, and the digits the whole job trained on in it (so that a new
// number of ranks resumes at the same point of the epoch, as batches of its
// own size).
struct Progress {
  std::int32_t epoch = 0;
  std::int64_t processed = 0;
};

// One generation's share of an elastic run, from the committed progress on.
// Runs again after every re-form, with the new size.
void train_generation(const Config& c, const mnist::Split& split, Net& net, torch::optim::SGD& sgd, Progress& progress,
                      trainrun::elastic::State& state, double& accuracy) {
  trainrun::Communicator& comm = trainrun::init();
  const int rank = comm.rank(), size = comm.size();
  set_threads(c, comm);
  // The program's choice, as in the plain run: the learning rate scales with
  // the number of ranks. The restored optimizer state carries the rate of the
  // size it was committed with, so it is set again for this one.
  for (auto& group : sgd.param_groups()) {
    static_cast<torch::optim::SGDOptions&>(group.options()).lr(c.lr * size);
  }
  // Built per generation: the old one's allreduces belonged to the old world.
  trainrun::torch::DistributedOptimizer optimizer(sgd, net.named_parameters(),
                                                  {trainrun::ReduceOp::Average, c.compression, 1});
  trainrun::DistributedSampler sampler(split.train.size(), rank, size, true, c.seed);
  const std::int64_t global_batch = static_cast<std::int64_t>(c.batch_size) * size;
  const std::int64_t steps = static_cast<std::int64_t>(sampler.size()) / c.batch_size;
  const auto [train_x, train_y] = tensors(split.train);
  const auto [test_x, test_y] = tensors(split.held_out);
  if (rank == 0) {
    std::printf("elastic: generation %d, %d ranks, resuming at epoch %d batch %lld\n", trainrun::elastic::generation(),
                size, progress.epoch + 1, static_cast<long long>(progress.processed / global_batch));
    std::fflush(stdout);
  }
  while (progress.epoch < c.epochs) {
    sampler.set_epoch(static_cast<std::uint64_t>(progress.epoch));
    const std::vector<std::size_t> mine = sampler.indices();
    const auto order = torch::tensor(std::vector<std::int64_t>(mine.begin(), mine.end()));
    for (std::int64_t step = progress.processed / global_batch; step < steps; ++step) {
      optimizer.zero_grad();
      const auto batch = order.slice(0, step * c.batch_size, (step + 1) * c.batch_size);
      torch::nn::functional::cross_entropy(net.forward(train_x.index_select(0, batch)), train_y.index_select(0, batch))
          .backward();
      optimizer.step();
      progress.processed = (step + 1) * global_batch;
      if ((step + 1) % c.commit_every == 0) state.commit();
    }
    accuracy = evaluate(net, test_x, test_y, rank, size);
    if (rank == 0) {
      std::printf("epoch %d/%d: held-out accuracy %.2f%% on %d rank(s)\n", progress.epoch + 1, c.epochs, 100 * accuracy,
                  size);
      std::fflush(stdout);
    }
    ++progress.epoch;
    progress.processed = 0;
    state.commit();
  }
}

int train_elastic(const Config& c) {
  const mnist::Split split = mnist::load(c.data);
  torch::manual_seed(c.seed);  // State::sync makes rank 0's parameters win anyway
  Net net;
  torch::optim::SGD sgd(net.parameters(), torch::optim::SGDOptions(c.lr).momentum(c.momentum));
  Progress progress;
  trainrun::elastic::State state;
  trainrun::torch::add_module(state, "model", net);
  trainrun::torch::add_optimizer(state, "optimizer", sgd);
  state.add_value("progress", progress);
  double accuracy = 0;
  trainrun::elastic::run(state, [&] { train_generation(c, split, net, sgd, progress, state, accuracy); });
  if (trainrun::init().rank() == 0) {
    std::printf("mnist: held-out accuracy %.2f%% after %d epoch(s); elastic, generation %d\n", 100 * accuracy, c.epochs,
                trainrun::elastic::generation());
  }
  trainrun::shutdown();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int exit_code = 0;
  std::optional<Config> parsed = mnist::parse_options(argc, argv, exit_code);
  if (!parsed) return exit_code;
  Config config = *parsed;
  std::string why;
  config.data = mnist::find_data(config, why);
  if (config.data.empty()) {
    std::fprintf(stderr, "mnist_train: %s\n", why.c_str());
    return 1;
  }
  try {
    return config.elastic ? train_elastic(config) : train(config);
  } catch (const trainrun::Error& e) {
    std::fprintf(stderr, "mnist_train: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mnist_train: %s\n", e.what());
    return 1;
  }
}
