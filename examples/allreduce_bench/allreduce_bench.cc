// allreduce_bench: allreduce throughput and latency per message size, in the
// style of nccl-tests, through trainrun's core API. Works under any launcher:
//   trainrun --local -np 2 ./allreduce_bench --min-bytes 4 --max-bytes 256M
//   mpirun -np 2 ./allreduce_bench --csv
// Options: --dtype float32|float16|bfloat16|float64|int32|int64|int8|uint8,
// --op sum|average|min|max|product, --min-bytes, --max-bytes, --factor,
// --iters (default: adaptive), --warmup, --csv.
#include <trainrun/trainrun.h>

#include <cstdio>
#include <string>
#include <vector>

#include "bench_harness.h"

namespace {

bool parse_type(const std::string& name, trainrun::DataType& out) {
  for (auto t : trainrun::kAllDataTypes) {
    if (name == trainrun::to_string(t)) return (out = t), true;
  }
  return false;
}

bool parse_op(const std::string& name, trainrun::ReduceOp& out) {
  for (auto o : trainrun::kAllReduceOps) {
    if (name == trainrun::to_string(o)) return (out = o), true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  bench::Config config;
  std::string error;
  trainrun::DataType type = trainrun::DataType::Float32;
  trainrun::ReduceOp op = trainrun::ReduceOp::Sum;
  if (!bench::parse_args(argc, argv, config, error) || !parse_type(config.type, type) ||
      !parse_op(config.op, op)) {
    std::fprintf(stderr, "allreduce_bench: %s\n", error.empty() ? "unknown --dtype or --op" : error.c_str());
    return 2;
  }
  try {
    trainrun::Communicator& comm = trainrun::init();
    const std::size_t element = trainrun::size_of(type);
    const std::size_t max_count = std::max<std::size_t>(config.max_bytes / element, 1);
    // Byte patterns stay finite in every dtype; the values do not matter here.
    std::vector<char> send(max_count * element, 1), recv(max_count * element, 0);
    bench::Hooks hooks;
    hooks.rank = comm.rank();
    hooks.size = comm.size();
    hooks.element_size = element;
    hooks.bus_factor = comm.size() > 1 ? 2.0 * (comm.size() - 1) / comm.size() : 1.0;
    hooks.run = [&](std::size_t count) { comm.allreduce(send.data(), recv.data(), count, type, op); };
    hooks.barrier = [&] { comm.barrier(); };
    hooks.max_across_ranks = [&](double v) {
      double out = 0;
      comm.allreduce(&v, &out, 1, trainrun::DataType::Float64, trainrun::ReduceOp::Max);
      return out;
    };
    const std::string title = "trainrun allreduce (" + comm.backend_name() + ")";
    bench::run(config, hooks, title.c_str());
    trainrun::shutdown();
    return 0;
  } catch (const trainrun::Error& e) {
    std::fprintf(stderr, "allreduce_bench: %s\n", e.what());
    return 1;
  }
}
