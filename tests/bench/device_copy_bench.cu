// device_copy_bench: what packing the engine's device fusion buffer costs,
// three ways, for the tensors of the ResNet-50 gradient set that the engine
// fuses on CUDA (those under 4 MiB; tests/bench/resnet50_sizes.txt):
//   per copy   one cudaMemcpyAsync (device to device) per tensor
//   batched    one cudaMemcpyBatchAsync for all of them (CUDA 12.8+)
//   kernel     the engine's fusion copy kernel (backends/nccl/fusion_copy.cu):
//              one launch per 128 buffers, the table passed by value
// For each: the host's time to enqueue (what the engine thread pays) and
// the time until the device is done, medians of 50 repetitions, in us.
// A benchmark for the GPU machine (it is not part of the Meson build: it
// needs nvcc):
//   nvcc -O2 -I. -o device_copy_bench tests/bench/device_copy_bench.cu && ./device_copy_bench tests/bench/resnet50_sizes.txt
// (scripts/gpu_checks.sh pack builds it when nvcc is found.)
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

// The library's own kernel, as the engine launches it (nccl_cuda_support.cc).
#include "backends/nccl/fusion_copy.cu"

namespace {

struct Copy {
  char* to;
  const char* from;
  size_t bytes;
};

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "device_copy_bench: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: device_copy_bench SIZES_FILE\n");
    return 2;
  }
  std::vector<size_t> bytes;
  std::ifstream in(argv[1]);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t b = std::stoul(line) * 4;
    if (b < (4u << 20)) bytes.push_back(b);
  }
  size_t total = 0;
  std::vector<size_t> offsets;
  for (size_t b : bytes) {
    offsets.push_back(total);
    total += (b + 63) / 64 * 64;
  }
  char *tensors = nullptr, *buffer = nullptr;
  check(cudaMalloc(&tensors, total), "cudaMalloc");
  check(cudaMalloc(&buffer, total), "cudaMalloc");
  cudaStream_t stream;
  check(cudaStreamCreate(&stream), "cudaStreamCreate");
  std::vector<Copy> table;
  std::vector<void*> dsts, srcs;
  for (size_t i = 0; i < bytes.size(); ++i) {
    table.push_back({buffer + offsets[i], tensors + offsets[i], bytes[i]});
    dsts.push_back(buffer + offsets[i]);
    srcs.push_back(tensors + offsets[i]);
  }
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);

  auto measure = [&](const char* name, auto&& enqueue) {
    std::vector<double> host, device;
    for (int rep = 0; rep < 55; ++rep) {
      cudaEventRecord(start, stream);
      const auto t0 = std::chrono::steady_clock::now();
      enqueue();
      const auto t1 = std::chrono::steady_clock::now();
      cudaEventRecord(stop, stream);
      check(cudaEventSynchronize(stop), name);
      float ms = 0;
      cudaEventElapsedTime(&ms, start, stop);
      if (rep < 5) continue;  // warm-up
      host.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      device.push_back(1000.0 * ms);
    }
    std::printf("  %-12s %12.1f %12.1f\n", name, median(host), median(device));
  };
  std::printf("# %zu tensors under 4 MiB, %.1f MB, into one buffer (us, medians of 50)\n", bytes.size(), total / 1e6);
  std::printf("# %-12s %12s %12s\n", "way", "host enqueue", "until done");
  measure("per copy", [&] {
    for (const Copy& c : table) check(cudaMemcpyAsync(c.to, c.from, c.bytes, cudaMemcpyDeviceToDevice, stream), "copy");
  });
#if CUDART_VERSION >= 12080
  cudaMemcpyAttributes attributes{};
  attributes.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  size_t first = 0;
  measure("batched", [&] {
#if CUDART_VERSION >= 13000
    check(cudaMemcpyBatchAsync(dsts.data(), srcs.data(), bytes.data(), bytes.size(), &attributes, &first, 1, stream),
          "cudaMemcpyBatchAsync");
#else
    size_t failed = 0;
    check(cudaMemcpyBatchAsync(dsts.data(), srcs.data(), bytes.data(), bytes.size(), &attributes, &first, 1, &failed,
                               stream),
          "cudaMemcpyBatchAsync");
#endif
  });
#endif
  measure("kernel", [&] {
    using trainrun::detail::kFusionCopyTableSize;
    for (size_t first = 0; first < table.size(); first += kFusionCopyTableSize) {
      trainrun::detail::FusionCopyTable t{};
      t.count = static_cast<int>(std::min<size_t>(kFusionCopyTableSize, table.size() - first));
      unsigned long long largest = 0;
      for (int i = 0; i < t.count; ++i) {
        const Copy& c = table[first + i];
        t.entries[i] = {reinterpret_cast<unsigned long long>(c.to), reinterpret_cast<unsigned long long>(c.from),
                        c.bytes};
        largest = std::max(largest, t.entries[i].bytes);
      }
      const unsigned blocks = trainrun::detail::fusion_copy_blocks(largest);
      trainrun_fusion_copy<<<dim3(blocks, t.count), trainrun::detail::kFusionCopyThreads, 0, stream>>>(t);
    }
  });
  return 0;
}
