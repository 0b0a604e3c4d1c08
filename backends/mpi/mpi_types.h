// MpiTypes: trainrun's DataType and ReduceOp as MPI handles. Native MPI types
// and ops wherever MPI has them, so that a Float32 Sum is exactly the
// MPI_Allreduce(MPI_FLOAT, MPI_SUM) a plain MPI program runs. Float16 and
// BFloat16 become committed 2-byte types whose user-defined ops call the
// shared kernels of backends/reduction.h (accumulate in float, round to
// nearest even). Average maps to Sum: the backend divides afterwards.
// Bool is MPI_C_BOOL, on which MPI defines only logical ops: MPI_LOR for
// Sum, Average and Max, MPI_LAND for Min and Product. Int16 is MPI_INT16_T.
// Owns the handles it created and frees them unless MPI is already
// finalized. Lookups are const and allocate nothing; not thread-safe to
// construct or destroy concurrently with MPI calls on other threads.
#pragma once

#include <mpi.h>

#include "trainrun/types.h"

namespace trainrun::detail {

class MpiTypes {
 public:
  MpiTypes();  // MPI must be initialised
  ~MpiTypes();
  MpiTypes(const MpiTypes&) = delete;
  MpiTypes& operator=(const MpiTypes&) = delete;

  MPI_Datatype datatype(DataType type) const;
  MPI_Op op(DataType type, ReduceOp op) const;

 private:
  static constexpr int kHalfTypes = 2;  // Float16, BFloat16
  static constexpr int kHalfOps = 4;    // Sum (and Average), Min, Max, Product
  MPI_Datatype half_[kHalfTypes] = {MPI_DATATYPE_NULL, MPI_DATATYPE_NULL};
  MPI_Op half_ops_[kHalfTypes][kHalfOps];  // MPI_OP_NULL until created
};

}  // namespace trainrun::detail
