// The MPI backend: collectives over the Open MPI C API on a duplicate of
// MPI_COMM_WORLD. It needs no rendezvous (the MPI launcher -- mpirun, srun,
// trainrun --launcher mpirun -- wires the ranks) and it corrects the world's
// local and cross ranks from MPI's own view of the nodes. MPI cannot cancel
// a blocked collective, so abort() ends the whole job (MPI_Abort), and the
// collective timeout does not apply. See backends/backend.h.
#pragma once

#include <memory>
#include <string>

#include "backends/backend.h"

namespace trainrun::detail {

std::unique_ptr<Backend> make_mpi_backend(const BackendContext& context);

}  // namespace trainrun::detail
