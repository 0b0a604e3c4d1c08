// engine_resnet_bench: one training step's gradient allreduce for ResNet-50
// (161 float32 tensors, 102 MB; tests/bench/resnet50_sizes.txt) three ways,
// in the same run, alternating round by round (which goes first alternates
// too):
//   engine  allreduce_async of every tensor, submitted in reverse order and
//           shuffled differently on every rank, then synchronize
//   (a)     one core allreduce per tensor, in a fixed order
//   (b)     one core allreduce of a pre-packed buffer of all of them
// While the engine runs, core calls go through it; so each round runs the
// engine steps, shuts the communicator down, and runs (a) and (b) on a fresh
// one. A step is timed from a barrier to the last rank's finish; the table
// gives medians over every round's steps, and the ratios the bar
// asks for. Also: the latency of one cached 4-byte engine allreduce against
// the core one, and the CPU an idle engine burns.
//   trainrun --local -np 2 build/tests/bench/engine_resnet_bench tests/bench/resnet50_sizes.txt
// Options after the file: --rounds N (8), --steps N (3).
#include <trainrun/trainrun.h>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/bench/gradient_set.h"

namespace {

using Clock = std::chrono::steady_clock;
using trainrun::DataType;
using trainrun::ReduceOp;

using bench::median;

double max_across_ranks(trainrun::Communicator& comm, double v) {
  double out = 0;
  comm.allreduce(&v, &out, 1, DataType::Float64, ReduceOp::Max);
  return out;
}

// Milliseconds from a barrier until the slowest rank finished `step`.
template <typename Step>
double timed(trainrun::Communicator& comm, Step&& step) {
  comm.barrier();
  const auto start = Clock::now();
  step();
  return max_across_ranks(comm, std::chrono::duration<double, std::milli>(Clock::now() - start).count());
}

double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

struct Results {
  std::vector<double> engine, per_tensor, packed, engine_small_us, core_small_us;
  double idle_cpu_percent = 0;
};

void engine_round(bench::GradientSet& set, int steps, int round, Results& results) {
  const auto& counts = set.counts;
  trainrun::Communicator& comm = trainrun::init();
  std::vector<std::size_t> order(counts.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = order.size() - 1 - i;
  std::vector<std::string> names;
  for (std::size_t i = 0; i < counts.size(); ++i) names.push_back("layer" + std::to_string(i) + ".grad");
  std::mt19937 shuffle(static_cast<unsigned>(1000 * comm.rank() + round));
  auto step = [&] {
    std::shuffle(order.begin(), order.end(), shuffle);
    std::vector<trainrun::Handle> handles;
    for (std::size_t i : order) {
      handles.push_back(trainrun::allreduce_async(
          names[i], {set.tensors[i].data(), DataType::Float32, {static_cast<std::int64_t>(counts[i])}}));
    }
    for (auto h : handles) trainrun::synchronize(h);
  };
  step();  // warm-up: negotiation fills the response cache
  for (int s = 0; s < steps; ++s) results.engine.push_back(timed(comm, step));

  float one = 1;
  auto small = [&] { trainrun::synchronize(trainrun::allreduce_async("one", {&one, DataType::Float32, {1}})); };
  for (int i = 0; i < 20; ++i) results.engine_small_us.push_back(1000 * timed(comm, small));

  // Idle: the thread still cycles, so that other ranks can reach this one.
  const double cpu = process_cpu_seconds();
  const auto start = Clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  results.idle_cpu_percent =
      100 * (process_cpu_seconds() - cpu) / std::chrono::duration<double>(Clock::now() - start).count();
  trainrun::shutdown();
}

void core_round(bench::GradientSet& set, int steps, Results& results) {
  trainrun::Communicator& comm = trainrun::init();
  auto per_tensor = [&] {
    for (auto& tensor : set.tensors) {
      comm.allreduce(tensor.data(), tensor.data(), tensor.size(), DataType::Float32, ReduceOp::Sum);
    }
  };
  auto one_buffer = [&] {
    comm.allreduce(set.packed.data(), set.packed.data(), set.packed.size(), DataType::Float32, ReduceOp::Sum);
  };
  per_tensor();
  one_buffer();
  for (int s = 0; s < steps; ++s) {
    results.per_tensor.push_back(timed(comm, per_tensor));
    results.packed.push_back(timed(comm, one_buffer));
  }
  float one = 1, out = 0;
  for (int i = 0; i < 20; ++i) {
    results.core_small_us.push_back(
        1000 * timed(comm, [&] { comm.allreduce(&one, &out, 1, DataType::Float32, ReduceOp::Sum); }));
  }
  trainrun::shutdown();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: engine_resnet_bench SIZES_FILE [--rounds N] [--steps N]\n");
    return 2;
  }
  int rounds = 8, steps = 3;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string option = argv[i];
    if (option == "--rounds") rounds = std::atoi(argv[i + 1]);
    else if (option == "--steps") steps = std::atoi(argv[i + 1]);
  }
  bench::GradientSet set = bench::load_gradient_set(argv[1]);
  if (set.counts.empty() || rounds < 1 || steps < 1) {
    std::fprintf(stderr, "engine_resnet_bench: no sizes in %s, or bad --rounds/--steps\n", argv[1]);
    return 2;
  }
  try {
    Results results;
    int rank = 0, size = 1;
    std::string backend;
    for (int round = 0; round < rounds; ++round) {
      if (round % 2) core_round(set, steps, results);
      engine_round(set, steps, round, results);
      if (round % 2 == 0) core_round(set, steps, results);
    }
    {
      trainrun::Communicator& comm = trainrun::init();
      rank = comm.rank();
      size = comm.size();
      backend = comm.backend_name();
      trainrun::shutdown();
    }
    if (rank != 0) return 0;
    const double e = median(results.engine), a = median(results.per_tensor), b = median(results.packed);
    std::printf("# ResNet-50 gradients: %zu float32 tensors, %.1f MB, np=%d, backend %s, %d rounds x %d steps\n",
                set.counts.size(), set.packed.size() * 4 / 1e6, size, backend.c_str(), rounds, steps);
    std::printf("# %-46s %10s %10s\n", "step", "median ms", "min ms");
    auto row = [](const char* what, const std::vector<double>& v) {
      std::printf("  %-46s %10.1f %10.1f\n", what, median(v), *std::min_element(v.begin(), v.end()));
    };
    row("engine (reverse order, shuffled per rank)", results.engine);
    row("(a) core allreduce per tensor, fixed order", results.per_tensor);
    row("(b) core allreduce of one pre-packed buffer", results.packed);
    std::printf("# engine / (b) = %.3f   engine / (a) = %.3f   (a) / (b) = %.3f\n", e / b, e / a, a / b);
    std::printf("# one float32 allreduce: engine (cached) %.1f us, core %.1f us (medians of 20)\n",
                median(results.engine_small_us), median(results.core_small_us));
    std::printf("# idle engine on rank 0: %.1f%% of one core (process CPU time over 0.5 s)\n",
                results.idle_cpu_percent);
    return 0;
  } catch (const trainrun::Error& e) {
    std::fprintf(stderr, "engine_resnet_bench: %s\n", e.what());
    return 1;
  }
}
