// What buffer routing costs a call on host buffers: the same 4-byte
// collective, in one process (so no network time hides the difference),
// on the bare tcp backend and on the RoutedBackend every communicator
// holds (which asks the CUDA driver about each buffer when the build has
// CUDA, and first whether the process has loaded the driver at all).
// Alternating rounds; prints ns per call and the ratio.
//   ./build/tests/bench/routing_overhead_bench [calls per round]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "backends/tcp/tcp_backend.h"
#include "backends/registry.h"

using namespace trainrun;
using namespace trainrun::detail;

namespace {

double ns_per_call(Backend& backend, int calls) {
  float in = 1, out = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) {
    backend.allreduce(&in, &out, 1, DataType::Float32, ReduceOp::Sum);
    backend.synchronize();
  }
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() / calls;
}

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int calls = argc > 1 ? std::atoi(argv[1]) : 200000;
  World world;
  world.hostname = "bench";
  auto bare = make_tcp_backend(BackendContext{world, nullptr, 0, {}});
  auto routed = create_backend("tcp", BackendContext{world, nullptr, 0, {}});
  std::vector<double> bare_ns, routed_ns;
  for (int round = 0; round < 9; ++round) {
    bare_ns.push_back(ns_per_call(*bare, calls));
    routed_ns.push_back(ns_per_call(*routed, calls));
  }
  const double b = median(bare_ns), r = median(routed_ns);
  std::printf("# allreduce of 4 host bytes, 1 process, median of 9 alternating rounds of %d calls\n", calls);
  std::printf("# %14s %14s %10s %12s\n", "tcp ns/call", "routed ns/call", "ratio", "added ns");
  std::printf("  %14.1f %14.1f %10.3f %12.1f\n", b, r, r / b, r - b);
  return 0;
}
