// allreduce_bench: allreduce throughput and latency per message size, in the
// style of nccl-tests, through trainrun's core API. Works under any launcher:
//   trainrun --local -np 2 ./allreduce_bench --min-bytes 4 --max-bytes 256M
//   mpirun -np 2 ./allreduce_bench --csv
//   trainrun --local -np 1 --backend nccl ./allreduce_bench --device cuda
// Options (allreduce_bench --help lists them; a bad value is one line and
// exit status 2): --dtype float32|float16|bfloat16|float64|int32|int64|int8|uint8,
// --op sum|average|min|max|product, --min-bytes, --max-bytes, --factor,
// --iters (default: adaptive), --warmup, --csv, --device host|cuda (CUDA
// buffers on the current device; through NCCL, or staged by --backend tcp),
// --collective allreduce|allgather|broadcast|alltoall|reducescatter (default
// allreduce; allgather: the size is the whole result, size/np from each
// rank; broadcast from rank 0; alltoall: the size is each rank's whole send
// buffer, split evenly among the ranks; reducescatter: the size is the whole
// input, size/np to each rank; busbw as nccl-tests computes it for each),
// --budget (bytes moved per size when --iters is not given),
// --process-set all|half (half: the first half of the ranks run the sweep
// as a process set, Communicator::subset; the others wait for them).
#include <trainrun/trainrun.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_harness.h"
#include "bench_options.h"
#include "cuda_memory.h"

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
  int exit_code = 0;
  const std::optional<bench::Config> parsed = bench::parse_options(argc, argv, exit_code);
  if (!parsed) return exit_code;
  const bench::Config& config = *parsed;
  trainrun::DataType type = trainrun::DataType::Float32;
  trainrun::ReduceOp op = trainrun::ReduceOp::Sum;
  parse_type(config.type, type);  // both checked by parse_options
  parse_op(config.op, op);
  const bool cuda = config.device == "cuda";
  std::string why;
  if (cuda && !cuda_memory::usable(why)) {
    std::fprintf(stderr, "allreduce_bench: --device cuda: %s\n", why.c_str());
    return 2;
  }
  try {
    trainrun::Communicator& world = trainrun::init();
    std::unique_ptr<trainrun::Communicator> set;
    if (config.process_set == "half") {
      std::vector<int> half(static_cast<std::size_t>(std::max(world.size() / 2, 1)));
      for (std::size_t r = 0; r < half.size(); ++r) half[r] = static_cast<int>(r);
      set = world.subset(half);
      if (!set) {  // outside the set: wait for its sweep
        world.barrier();
        trainrun::shutdown();
        return 0;
      }
    }
    trainrun::Communicator& comm = set ? *set : world;
    const std::size_t element = trainrun::size_of(type);
    // alltoall sends at least one element to every rank.
    const std::size_t max_count = std::max<std::size_t>(config.max_bytes / element, comm.size());
    // Byte patterns stay finite in every dtype; the values do not matter here.
    std::vector<char> host_send(max_count * element, 1), host_recv(max_count * element, 0);
    void* send = host_send.data();
    void* recv = host_recv.data();
    std::unique_ptr<void, void (*)(void*)> device_send(nullptr, cuda_memory::release),
        device_recv(nullptr, cuda_memory::release);
    if (cuda) {
      device_send.reset(send = cuda_memory::allocate(host_send.size()));
      device_recv.reset(recv = cuda_memory::allocate(host_recv.size()));
      cuda_memory::copy(send, host_send.data(), host_send.size());
      cuda_memory::copy(recv, host_recv.data(), host_recv.size());
    }
    // --device allocated: the library's host memory, which the host's ranks
    // map (an allreduce from 64 KiB reads it in place).
    const auto give_back = [&comm](void* p) { comm.free_memory(p); };
    std::unique_ptr<void, std::function<void(void*)>> allocated_send(nullptr, give_back),
        allocated_recv(nullptr, give_back);
    if (config.device == "allocated") {
      allocated_send.reset(send = comm.allocate_memory(host_send.size()));
      allocated_recv.reset(recv = comm.allocate_memory(host_recv.size()));
      std::memcpy(send, host_send.data(), host_send.size());
      std::memcpy(recv, host_recv.data(), host_recv.size());
    }
    bench::Hooks hooks;
    hooks.rank = comm.rank();
    hooks.size = comm.size();
    hooks.element_size = element;
    const double n = comm.size();
    if (config.collective == "broadcast") {
      hooks.bus_factor = 1.0;
      hooks.run = [&](std::size_t count) { comm.broadcast(recv, count, type, 0); };
    } else if (config.collective == "allgather") {
      hooks.bus_factor = (n - 1) / n;
      hooks.run = [&](std::size_t count) {
        const std::size_t each = std::max<std::size_t>(count / comm.size(), 1);
        comm.allgather(send, recv, each, type);
      };
    } else if (config.collective == "reducescatter") {
      hooks.bus_factor = (n - 1) / n;
      hooks.run = [&](std::size_t count) {
        comm.reducescatter(send, recv, std::max<std::size_t>(count / comm.size(), 1), type, op);
      };
    } else if (config.collective == "alltoall") {
      hooks.bus_factor = (n - 1) / n;
      hooks.run = [&](std::size_t count) {
        comm.alltoall(send, recv, std::max<std::size_t>(count / comm.size(), 1), type);
      };
    } else {
      hooks.bus_factor = n > 1 ? 2.0 * (n - 1) / n : 1.0;
      // --in-place: recv is both (zeros, which stay zero under every op's timing).
      if (config.in_place) send = recv;
      hooks.run = [&](std::size_t count) { comm.allreduce(send, recv, count, type, op); };
      // --rewrite: the pattern again (the sum of one call stays finite).
      if (config.rewrite)
        hooks.prepare = [&](std::size_t count) { std::memcpy(send, host_send.data(), count * element); };
    }
    hooks.barrier = [&] { comm.barrier(); };
    hooks.max_across_ranks = [&](double v) {
      double out = 0;
      comm.allreduce(&v, &out, 1, trainrun::DataType::Float64, trainrun::ReduceOp::Max);
      return out;
    };
    const std::string title = "trainrun " + config.collective + " (" + comm.backend_name() + ", " + config.device +
                              " buffers" + (config.in_place ? ", in place" : "") +
                              (config.rewrite ? ", rewritten" : "") +
                              (set ? ", a process set of " + std::to_string(world.size()) + " ranks" : "") + ")";
    bench::run(config, hooks, title.c_str());
    device_send.reset();
    device_recv.reset();
    allocated_send.reset();
    allocated_recv.reset();
    if (set) {
      set.reset();
      world.barrier();
    }
    trainrun::shutdown();
    return 0;
  } catch (const std::runtime_error& e) {  // trainrun::Error, or a CUDA runtime error
    std::fprintf(stderr, "allreduce_bench: %s\n", e.what());
    return 1;
  }
}
