// The MPI counterpart of noop.cc: MPI_Init, one barrier, MPI_Finalize.
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
