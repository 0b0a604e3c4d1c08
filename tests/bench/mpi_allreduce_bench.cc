// The plain-MPI baseline for allreduce_bench: the same sizes and timing loop
// (examples/allreduce_bench/bench_harness.h), but straight MPI: MPI_Init and
// MPI_Allreduce(MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD), exactly what a program
// without trainrun would write. Nothing of libtrainrun is linked in.
// --collective allgather|broadcast|reducescatter times MPI_Allgather (the
// size is the whole result), MPI_Bcast from rank 0 or MPI_Reduce_scatter_block
// (the size is the whole input) instead, as allreduce_bench does.
//   mpirun -np 2 ./mpi_allreduce_bench [bench options]
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "examples/allreduce_bench/bench_harness.h"

int main(int argc, char** argv) {
  bench::Config config;
  std::string error;
  if (!bench::parse_args(argc, argv, config, error) || config.type != "float32" || config.op != "sum" ||
      config.collective == "alltoall") {
    std::fprintf(stderr,
                 "mpi_allreduce_bench: float32 sum; allreduce, allgather, broadcast or reducescatter only. %s\n",
                 error.c_str());
    return 2;
  }
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  const std::size_t max_count = std::max<std::size_t>(config.max_bytes / sizeof(float), 1);
  // The send buffer is never smaller than one rank's allgather block.
  std::vector<float> send(max_count + size, 1.0f), recv(max_count + size, 0.0f);
  bench::Hooks hooks;
  hooks.rank = rank;
  hooks.size = size;
  hooks.element_size = sizeof(float);
  hooks.bus_factor = size > 1 ? 2.0 * (size - 1) / size : 1.0;
  hooks.run = [&](std::size_t count) {
    MPI_Allreduce(send.data(), recv.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  };
  if (config.collective == "allgather") {
    hooks.bus_factor = (size - 1.0) / size;
    hooks.run = [&](std::size_t count) {
      const int each = static_cast<int>(std::max<std::size_t>(count / size, 1));
      MPI_Allgather(send.data(), each, MPI_FLOAT, recv.data(), each, MPI_FLOAT, MPI_COMM_WORLD);
    };
  } else if (config.collective == "reducescatter") {
    hooks.bus_factor = (size - 1.0) / size;
    hooks.run = [&](std::size_t count) {
      const int each = static_cast<int>(std::max<std::size_t>(count / size, 1));
      MPI_Reduce_scatter_block(send.data(), recv.data(), each, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    };
  } else if (config.collective == "broadcast") {
    hooks.bus_factor = 1.0;
    hooks.run = [&](std::size_t count) {
      MPI_Bcast(recv.data(), static_cast<int>(count), MPI_FLOAT, 0, MPI_COMM_WORLD);
    };
  }
  hooks.barrier = [] { MPI_Barrier(MPI_COMM_WORLD); };
  hooks.max_across_ranks = [](double v) {
    double out = 0;
    MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return out;
  };
  bench::run(config, hooks, ("plain MPI " + config.collective).c_str());
  MPI_Finalize();
  return 0;
}
