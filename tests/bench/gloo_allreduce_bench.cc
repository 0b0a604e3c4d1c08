// The plain-Gloo baseline for allreduce_bench: the same sizes and timing
// loop (examples/allreduce_bench/bench_harness.h), but straight Gloo: a
// FileStore rendezvous, connectFullMesh and gloo::allreduce over float32
// with gloo::sum, exactly what a program without trainrun would write.
// Rank and size come from TRAINRUN_RANK/TRAINRUN_SIZE (trainrun is used only
// to start the processes; nothing of libtrainrun is linked in).
// --iface IF binds Gloo's device to that interface (ranks on several hosts;
// the default is loopback).
//   trainrun --local -np 2 ./gloo_allreduce_bench --store /tmp/dir [--iface IF] [bench options]
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "examples/allreduce_bench/bench_harness.h"

int main(int argc, char** argv) {
  std::string store_dir, iface;
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--store" && i + 1 < argc) store_dir = argv[++i];
    else if (std::string(argv[i]) == "--iface" && i + 1 < argc) iface = argv[++i];
    else rest.push_back(argv[i]);
  }
  bench::Config config;
  std::string error;
  if (store_dir.empty() || !bench::parse_args(static_cast<int>(rest.size()), rest.data(), config, error) ||
      config.type != "float32" || config.op != "sum" || config.collective != "allreduce") {
    std::fprintf(stderr, "gloo_allreduce_bench: needs --store DIR; float32 sum allreduce only. %s\n", error.c_str());
    return 2;
  }
  const char* rank_env = std::getenv("TRAINRUN_RANK");
  const char* size_env = std::getenv("TRAINRUN_SIZE");
  if (!rank_env || !size_env) {
    std::fprintf(stderr, "gloo_allreduce_bench: start it with trainrun (TRAINRUN_RANK/SIZE)\n");
    return 2;
  }
  const int rank = std::atoi(rank_env), size = std::atoi(size_env);

  gloo::transport::tcp::attr attr;
  if (iface.empty()) attr.hostname = "127.0.0.1";
  else attr.iface = iface;
  auto device = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore store(store_dir);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
  context->connectFullMesh(store, device);

  const std::size_t max_count = std::max<std::size_t>(config.max_bytes / sizeof(float), 1);
  std::vector<float> send(max_count, 1.0f), recv(max_count, 0.0f);
  auto sum = static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>);
  std::uint32_t tag = 0;
  auto allreduce = [&](void* in, void* out, std::size_t count, gloo::AllreduceOptions::Func fn) {
    gloo::AllreduceOptions opts(context);
    opts.setInput(static_cast<float*>(in), count);
    opts.setOutput(static_cast<float*>(out), count);
    opts.setReduceFunction(fn);
    opts.setTag(tag++);
    gloo::allreduce(opts);
  };

  bench::Hooks hooks;
  hooks.rank = rank;
  hooks.size = size;
  hooks.element_size = sizeof(float);
  hooks.bus_factor = size > 1 ? 2.0 * (size - 1) / size : 1.0;
  hooks.run = [&](std::size_t count) { allreduce(send.data(), recv.data(), count, sum); };
  hooks.barrier = [&] {
    gloo::BarrierOptions opts(context);
    opts.setTag(tag++);
    gloo::barrier(opts);
  };
  hooks.max_across_ranks = [&](double v) {
    double out = 0;
    gloo::AllreduceOptions opts(context);
    opts.setInput(&v, 1);
    opts.setOutput(&out, 1);
    opts.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::max<double>));
    opts.setTag(tag++);
    gloo::allreduce(opts);
    return out;
  };
  return bench::run(config, hooks, "plain Gloo allreduce");
}
