// staging_latency_bench: where the time of a small staged CUDA allreduce
// goes when several ranks share one GPU. For each size it times, per call,
// on every rank:
//   allreduce  the core allreduce of a CUDA buffer (staged: copy to pinned
//              host memory, host allreduce, copy back)
//   host       the same allreduce of a pinned host buffer (no GPU at all)
//   copies     the staging copies alone (device to pinned host and back),
//              every rank at once, aligned by a barrier before each call
//   copies, one rank at a time   the same, the ranks taking turns, so that
//              no two processes use the GPU at once
// and prints p50/p90/p99 in microseconds, per rank. Comparing the rows says
// whether the time is the GPU's (copies at once against in turn) or the
// host collective's.
//   trainrun --local -np 2 --backend tcp build/tests/bench/staging_latency_bench [--iterations N]
// Exits 77 without a GPU.
#include <trainrun/trainrun.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "examples/allreduce_bench/cuda_memory.h"

namespace {

using Clock = std::chrono::steady_clock;
using trainrun::DataType;
using trainrun::ReduceOp;

double micros_since(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

// p50, p90, p99 of `samples`.
std::vector<double> percentiles(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  auto at = [&](double q) { return samples[static_cast<std::size_t>(q * (samples.size() - 1))]; };
  return {at(0.5), at(0.9), at(0.99)};
}

struct Buffers {
  void* device;
  void* pinned;
};

// One row: every rank's percentiles, printed by rank 0.
void report(trainrun::Communicator& comm, std::size_t bytes, const char* what, const std::vector<double>& samples) {
  const std::vector<double> mine = percentiles(samples);
  std::vector<double> all(mine.size() * static_cast<std::size_t>(comm.size()));
  comm.allgather(mine.data(), all.data(), mine.size(), DataType::Float64);
  if (comm.rank() != 0) return;
  for (int r = 0; r < comm.size(); ++r) {
    std::printf("  %8zu  %-34s %4d %9.1f %9.1f %9.1f\n", bytes, what, r, all[3 * r], all[3 * r + 1], all[3 * r + 2]);
  }
}

void measure(trainrun::Communicator& comm, const Buffers& b, std::size_t bytes, int iterations) {
  const std::size_t count = bytes / sizeof(float);
  std::vector<double> reduce, host, together, in_turn;
  for (int i = 0; i < iterations; ++i) {
    auto start = Clock::now();
    comm.allreduce(b.device, b.device, count, DataType::Float32, ReduceOp::Sum);
    reduce.push_back(micros_since(start));
  }
  for (int i = 0; i < iterations; ++i) {
    auto start = Clock::now();
    comm.allreduce(b.pinned, b.pinned, count, DataType::Float32, ReduceOp::Sum);
    host.push_back(micros_since(start));
  }
  auto copies = [&] {
    const auto start = Clock::now();
    cuda_memory::copy(b.pinned, b.device, bytes);
    cuda_memory::copy(b.device, b.pinned, bytes);
    return micros_since(start);
  };
  for (int i = 0; i < iterations; ++i) {
    comm.barrier();
    together.push_back(copies());
  }
  for (int i = 0; i < iterations; ++i) {
    for (int turn = 0; turn < comm.size(); ++turn) {
      if (turn == comm.rank()) in_turn.push_back(copies());
      comm.barrier();
    }
  }
  report(comm, bytes, "allreduce, CUDA buffer (staged)", reduce);
  report(comm, bytes, "allreduce, pinned host buffer", host);
  report(comm, bytes, "copies, every rank at once", together);
  report(comm, bytes, "copies, one rank at a time", in_turn);
}

}  // namespace

int main(int argc, char** argv) {
  int iterations = 1000;
  if (argc == 3 && std::string(argv[1]) == "--iterations") iterations = std::atoi(argv[2]);
  if (iterations < 1) {
    std::fprintf(stderr, "usage: staging_latency_bench [--iterations N]\n");
    return 2;
  }
  std::string why;
  if (!cuda_memory::usable(why)) {
    std::printf("staging_latency_bench: skipped: %s\n", why.c_str());
    return 77;
  }
  try {
    trainrun::Communicator& comm = trainrun::init();
    const std::size_t largest = 16 * 1024;
    Buffers b{cuda_memory::allocate(largest), cuda_memory::allocate_pinned(largest)};
    cuda_memory::copy(b.device, b.pinned, largest);
    if (comm.rank() == 0) {
      std::printf("# staged CUDA allreduce on one GPU: np=%d, backend %s, %d calls per row (us per call)\n",
                  comm.size(), comm.backend_name().c_str(), iterations);
      std::printf("# %8s  %-34s %4s %9s %9s %9s\n", "bytes", "what", "rank", "p50", "p90", "p99");
    }
    for (std::size_t bytes : {std::size_t{4}, std::size_t{256}, std::size_t{4096}, largest}) {
      measure(comm, b, bytes, iterations);
    }
    cuda_memory::release(b.device);
    cuda_memory::release_pinned(b.pinned);
    trainrun::shutdown();
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "staging_latency_bench: %s\n", e.what());
    return 1;
  }
}
