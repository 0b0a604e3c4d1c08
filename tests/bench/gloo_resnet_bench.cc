// gloo_resnet_bench: the ResNet-50 gradient set allreduced with plain Gloo,
// what a program without trainrun would write (as gloo_allreduce_bench):
// FileStore rendezvous, connectFullMesh, gloo::allreduce with gloo::sum,
// (a) one call per tensor in a fixed order and (b) one call on a pre-packed
// buffer. The reference for engine_resnet_bench's (a) and (b) rows.
//   trainrun --local -np 2 ./gloo_resnet_bench tests/bench/resnet50_sizes.txt --store /tmp/dir
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/bench/gradient_set.h"

int main(int argc, char** argv) {
  const char* rank_env = std::getenv("TRAINRUN_RANK");
  const char* size_env = std::getenv("TRAINRUN_SIZE");
  if (argc != 4 || std::string(argv[2]) != "--store" || !rank_env || !size_env) {
    std::fprintf(stderr, "usage (under trainrun): gloo_resnet_bench SIZES_FILE --store DIR\n");
    return 2;
  }
  const int rank = std::atoi(rank_env), size = std::atoi(size_env);
  bench::GradientSet set = bench::load_gradient_set(argv[1]);

  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto device = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore store(argv[3]);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
  context->connectFullMesh(store, device);
  std::uint32_t tag = 0;
  auto allreduce = [&](float* data, std::size_t count) {
    gloo::AllreduceOptions opts(context);
    opts.setOutput(data, count);
    opts.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
    opts.setTag(tag++);
    gloo::allreduce(opts);
  };
  auto timed = [&](auto&& step) {
    gloo::BarrierOptions barrier(context);
    barrier.setTag(tag++);
    gloo::barrier(barrier);
    const auto start = std::chrono::steady_clock::now();
    step();
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    gloo::AllreduceOptions opts(context);
    opts.setOutput(&ms, 1);
    opts.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::max<double>));
    opts.setTag(tag++);
    gloo::allreduce(opts);
    return ms;
  };
  auto per_tensor = [&] {
    for (auto& tensor : set.tensors) allreduce(tensor.data(), tensor.size());
  };
  auto one_buffer = [&] { allreduce(set.packed.data(), set.packed.size()); };
  per_tensor();
  one_buffer();
  std::vector<double> a, b;
  for (int step = 0; step < 8; ++step) {
    a.push_back(timed(per_tensor));
    b.push_back(timed(one_buffer));
  }
  if (rank == 0) {
    std::printf("# plain Gloo, ResNet-50 gradients (%zu float32 tensors, %.1f MB), np=%d, medians of 8 steps\n",
                set.counts.size(), set.packed.size() * 4 / 1e6, size);
    std::printf("  (a) gloo::allreduce per tensor, fixed order   %8.1f ms\n", bench::median(a));
    std::printf("  (b) gloo::allreduce of one pre-packed buffer  %8.1f ms\n", bench::median(b));
  }
  return 0;
}
