// MpiRuntime: the process's one owner of MPI_Init_thread / MPI_Finalize.
//
// MPI may be initialised only once per process, so the runtime outlives any
// communicator: trainrun::shutdown() followed by trainrun::init() reuses it.
// It finalises MPI when the process exits with status 0 (an on_exit hook);
// on a non-zero exit it leaves MPI alone, so that mpirun sees the failure and
// stops the job instead of this rank blocking in MPI_Finalize while its peers
// wait in a collective. When the program initialised MPI itself, the runtime
// neither initialises nor finalises it.
//
// Thread safety: acquire() may be called from any thread (a magic static).
// MPI runs at MPI_THREAD_SINGLE, as a plain MPI_Init program does: Open MPI
// 4.1 turns on its locks for any higher level, which doubled small-message
// allreduce latency here (0.7 -> 1.0-3 us at np=2, FUNNELED and SERIALIZED
// alike). The core API calls MPI only from the thread that uses the
// communicator; a layer that moves MPI calls to a background thread must
// initialise MPI itself at the level it needs (the runtime then keeps it),
// or set TRAINRUN_MPI_THREADS=multiple (process sets need it).
#pragma once

namespace trainrun::detail {

class MpiRuntime {
 public:
  // Initialises MPI on the first call. Throws Error(Backend) if MPI_Init_thread
  // fails or MPI has been finalized (by the program) since.
  static MpiRuntime& acquire();

  // True once MPI_Finalize has run (by us or by the program): MPI objects
  // must then be dropped without MPI_*_free calls.
  static bool finalized();

  bool initialised_by_us() const { return owned_; }

 private:
  MpiRuntime();
  static void finalize_on_success(int status, void* runtime);

  bool owned_ = false;
};

// Turns an MPI return code into Error(Backend, "<call>: <MPI_Error_string>").
void check_mpi(int code, const char* call);

}  // namespace trainrun::detail
