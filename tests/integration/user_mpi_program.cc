// A program that owns MPI itself (MPI_Init / MPI_Finalize) and also uses
// trainrun: the library must neither initialise nor finalize MPI here, and
// must survive the program finalizing MPI before trainrun::shutdown(), and
// init() after that is an error.
//   mpirun -np 2 ./user_mpi_program shutdown-first|finalize-first
#include <mpi.h>
#include <trainrun/trainrun.h>

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const bool finalize_first = argc > 1 && std::string(argv[1]) == "finalize-first";
  long long rank = -1, sum = 0, mpi_sum = 0;
  std::string backend;
  try {
    auto& comm = trainrun::init();
    rank = comm.rank();
    backend = comm.backend_name();
    comm.allreduce(&rank, &sum, 1, trainrun::DataType::Int64, trainrun::ReduceOp::Sum);
    if (finalize_first) MPI_Finalize();
    trainrun::shutdown();
  } catch (const trainrun::Error& e) {
    std::fprintf(stderr, "user_mpi_program: %s\n", e.what());
    return 1;
  }
  try {
    if (finalize_first) trainrun::init();  // MPI is gone: a clear error, not an MPI abort
  } catch (const trainrun::Error& e) {
    std::printf("rank %lld: init again: %s\n", rank, e.what());
  }
  if (!finalize_first) {  // the program's MPI outlives trainrun's communicator
    MPI_Allreduce(&rank, &mpi_sum, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
  }
  std::printf("rank %lld: %s sum=%lld mpi_sum=%lld\n", rank, backend.c_str(), sum, mpi_sum);
  return 0;
}
