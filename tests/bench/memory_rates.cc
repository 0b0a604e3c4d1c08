// memory_rates: what this machine's memory allows, the yardstick for the
// shared-memory collectives (tests/bench/shm_model_bench.py prints their
// busbw as a fraction of a model built from these rates). Measures memcpy
// and float32 `a += b` on one thread and on two at once (each thread its
// own buffers, far larger than the caches), and prints one CSV line each:
//
//   kernel,threads,GB/s per thread
//   memcpy,1,10.1
//
// GB/s counts the bytes of the destination (memcpy: bytes copied; a += b:
// bytes of a), as a collective's busbw counts its message.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kBytes = 256u << 20;  // per buffer: beyond any cache
constexpr int kRepeats = 5;

// Seconds of the fastest of kRepeats passes of `kernel` over fresh buffers.
template <typename Kernel>
double fastest_pass(Kernel kernel) {
  std::vector<float> a(kBytes / sizeof(float), 1.0f), b(kBytes / sizeof(float), 2.0f);
  double best = 1e9;
  for (int i = 0; i < kRepeats; ++i) {
    const auto start = Clock::now();
    kernel(a.data(), b.data(), a.size());
    best = std::min(best, std::chrono::duration<double>(Clock::now() - start).count());
  }
  if (a[a.size() / 2] < 0) std::puts("");  // keep the passes
  return best;
}

void copy_kernel(float* a, const float* b, std::size_t n) { std::memcpy(a, b, n * sizeof(float)); }

void add_kernel(float* a, const float* b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) a[i] += b[i];
}

// GB/s per thread with `threads` threads running the kernel at once.
template <typename Kernel>
double rate(Kernel kernel, int threads) {
  std::vector<double> seconds(static_cast<std::size_t>(threads));
  std::vector<std::thread> running;
  for (int t = 0; t < threads; ++t) running.emplace_back([&, t] { seconds[t] = fastest_pass(kernel); });
  for (auto& t : running) t.join();
  const double slowest = *std::max_element(seconds.begin(), seconds.end());
  return kBytes / slowest / 1e9;
}

}  // namespace

int main() {
  std::puts("kernel,threads,GB/s per thread");
  for (int threads : {1, 2}) {
    std::printf("memcpy,%d,%.2f\n", threads, rate(copy_kernel, threads));
    std::printf("add,%d,%.2f\n", threads, rate(add_kernel, threads));
  }
  return 0;
}
