// engine_cuda_bench: one training step's gradient allreduce for ResNet-50
// (161 float32 tensors, 102 MB; tests/bench/resnet50_sizes.txt) in CUDA
// memory, six ways in the same run, alternating round by round:
//   engine fused    allreduce_async of every tensor (reverse order), then
//                   synchronize: the engine packs them into its device
//                   fusion buffer (TRAINRUN_FUSION_THRESHOLD's default)
//   engine unfused  the same with TRAINRUN_FUSION_THRESHOLD=0: one backend
//                   call per tensor
//   group, fused / unfused   the same tensors as one grouped_allreduce_async:
//                   one request, so one negotiation, and the step is the
//                   execution that fusion changes (the per-tensor rows also
//                   wait for the engine's cycles, TRAINRUN_CYCLE_TIME_MS)
//   (a)             one core allreduce per tensor
//   (b)             one core allreduce of a pre-packed device buffer
// A step is timed from a barrier until the device has finished it on the
// slowest rank (cudaDeviceSynchronize). Every step averages, so each tensor
// keeps the value it had after the first: tensor i holds i + 1 + (np-1)/2
// at the end on every rank, or the program says which does not and fails.
//   trainrun --local -np 1 --backend nccl build/tests/bench/engine_cuda_bench tests/bench/resnet50_sizes.txt
// Options after the file: --rounds N (6), --steps N (10). Exits 77 without a GPU.
#include <trainrun/trainrun.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "examples/allreduce_bench/cuda_memory.h"
#include "tests/bench/gradient_set.h"

namespace {

using Clock = std::chrono::steady_clock;
using trainrun::DataType;
using trainrun::ReduceOp;

struct DeviceSet {
  std::vector<std::size_t> counts;
  std::vector<float*> tensors;
  float* packed = nullptr;
  std::size_t total = 0;
};

DeviceSet make_device_set(const std::vector<std::size_t>& counts, int rank) {
  DeviceSet set;
  set.counts = counts;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    std::vector<float> host(counts[i], static_cast<float>(i + 1 + rank));
    set.tensors.push_back(static_cast<float*>(cuda_memory::allocate(counts[i] * sizeof(float))));
    cuda_memory::copy(set.tensors.back(), host.data(), host.size() * sizeof(float));
    set.total += counts[i];
  }
  set.packed = static_cast<float*>(cuda_memory::allocate(set.total * sizeof(float)));
  return set;
}

// Milliseconds from a barrier until the slowest rank's device finished `step`.
template <typename Step>
double timed(trainrun::Communicator& comm, Step&& step) {
  comm.barrier();
  const auto start = Clock::now();
  step();
  cuda_memory::synchronize();
  double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count(), slowest = 0;
  comm.allreduce(&ms, &slowest, 1, DataType::Float64, ReduceOp::Max);
  return slowest;
}

// Engine steps, fused or not; `grouped`: one grouped_allreduce_async.
void engine_steps(DeviceSet& set, bool fused, bool grouped, int steps, std::vector<double>& out) {
  // The engine reads its options when it starts: a fresh communicator each time.
  ::setenv("TRAINRUN_FUSION_THRESHOLD", fused ? "67108864" : "0", 1);
  trainrun::Communicator& comm = trainrun::init();
  std::vector<std::string> names;
  std::vector<trainrun::Tensor> tensors;
  const int device = 0;  // the bench's buffers live on the current device, whatever its number
  for (std::size_t i = set.counts.size(); i-- > 0;) {
    names.push_back("layer" + std::to_string(i) + ".grad");
    tensors.push_back({set.tensors[i], DataType::Float32, {static_cast<std::int64_t>(set.counts[i])}, device});
  }
  auto step = [&] {
    if (grouped) return trainrun::synchronize(trainrun::grouped_allreduce_async(names, tensors, ReduceOp::Average));
    std::vector<trainrun::Handle> handles;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      handles.push_back(trainrun::allreduce_async(names[i], tensors[i], ReduceOp::Average));
    }
    for (auto h : handles) trainrun::synchronize(h);
    return trainrun::Output{};
  };
  step();  // warm-up: negotiation fills the response cache
  for (int s = 0; s < steps; ++s) out.push_back(timed(comm, step));
  trainrun::shutdown();
}

void core_steps(DeviceSet& set, int steps, std::vector<double>& per_tensor, std::vector<double>& packed) {
  trainrun::Communicator& comm = trainrun::init();
  auto each = [&] {
    for (std::size_t i = 0; i < set.counts.size(); ++i) {
      comm.allreduce(set.tensors[i], set.tensors[i], set.counts[i], DataType::Float32, ReduceOp::Average);
    }
  };
  auto one = [&] { comm.allreduce(set.packed, set.packed, set.total, DataType::Float32, ReduceOp::Sum); };
  each();
  one();
  for (int s = 0; s < steps; ++s) {
    per_tensor.push_back(timed(comm, each));
    packed.push_back(timed(comm, one));
  }
  trainrun::shutdown();
}

// The first tensor whose elements are not i + 1 + (size-1)/2, or -1.
long first_wrong(const DeviceSet& set, int size) {
  for (std::size_t i = 0; i < set.counts.size(); ++i) {
    std::vector<float> host(set.counts[i]);
    cuda_memory::copy(host.data(), set.tensors[i], host.size() * sizeof(float));
    const float want = static_cast<float>(i + 1) + static_cast<float>(size - 1) / 2;
    if (std::any_of(host.begin(), host.end(), [&](float v) { return v != want; })) return static_cast<long>(i);
  }
  return -1;
}

void print_table(const DeviceSet& set, int size, const std::string& backend, int rounds, int steps,
                 const std::vector<std::vector<double>>& results) {
  using bench::median;
  std::printf(
      "# ResNet-50 gradients in CUDA memory: %zu float32 tensors, %.1f MB, np=%d, backend %s, "
      "%d rounds x %d steps\n",
      set.counts.size(), static_cast<double>(set.total) * 4 / 1e6, size, backend.c_str(), rounds, steps);
  std::printf("# %-46s %10s %10s\n", "step (until the device is done)", "median ms", "min ms");
  const char* rows[] = {"engine, fused (device fusion buffer)", "engine, unfused (one call per tensor)",
                        "engine, one group of all, fused",      "engine, one group of all, unfused",
                        "(a) core allreduce per tensor",        "(b) core allreduce of one pre-packed buffer"};
  for (std::size_t r = 0; r < results.size(); ++r) {
    std::printf("  %-46s %10.3f %10.3f\n", rows[r], median(results[r]),
                *std::min_element(results[r].begin(), results[r].end()));
  }
  std::printf("# unfused / fused = %.2f   group: unfused / fused = %.2f   fused / (b) = %.2f   (a) / (b) = %.2f\n",
              median(results[1]) / median(results[0]), median(results[3]) / median(results[2]),
              median(results[0]) / median(results[5]), median(results[4]) / median(results[5]));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: engine_cuda_bench SIZES_FILE [--rounds N] [--steps N]\n");
    return 2;
  }
  int rounds = 6, steps = 10;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string option = argv[i];
    if (option == "--rounds") rounds = std::atoi(argv[i + 1]);
    else if (option == "--steps") steps = std::atoi(argv[i + 1]);
  }
  const std::vector<std::size_t> counts = bench::read_tensor_sizes(argv[1]);
  if (counts.empty() || rounds < 1 || steps < 1) {
    std::fprintf(stderr, "engine_cuda_bench: no sizes in %s, or bad --rounds/--steps\n", argv[1]);
    return 2;
  }
  std::string why;
  if (!cuda_memory::usable(why)) {
    std::printf("engine_cuda_bench: skipped: %s\n", why.c_str());
    return 77;
  }
  try {
    trainrun::Communicator& comm = trainrun::init();
    const int rank = comm.rank(), size = comm.size();
    const std::string backend = comm.backend_name();
    trainrun::shutdown();
    DeviceSet set = make_device_set(counts, rank);
    std::vector<std::vector<double>> results(6);
    for (int round = 0; round < rounds; ++round) {
      // Which of fused and unfused goes first alternates.
      for (bool grouped : {false, true}) {
        const int row = grouped ? 2 : 0;
        engine_steps(set, round % 2 == 0, grouped, steps, results[row + round % 2]);
        engine_steps(set, round % 2 != 0, grouped, steps, results[row + (round + 1) % 2]);
      }
      core_steps(set, steps, results[4], results[5]);
    }
    const long wrong = first_wrong(set, size);
    if (wrong >= 0) {
      std::fprintf(stderr, "engine_cuda_bench: rank %d: tensor %ld holds a wrong value after the steps\n", rank, wrong);
      return 1;
    }
    if (rank == 0) print_table(set, size, backend, rounds, steps, results);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "engine_cuda_bench: %s\n", e.what());
    return 1;
  }
}
