#include "backends/mpi/mpi_runtime.h"

#include <mpi.h>

#include <cstdlib>
#include <string>

#include "contract/environment.h"
#include "trainrun/error.h"

namespace trainrun::detail {

MpiRuntime& MpiRuntime::acquire() {
  // Checked on every call: MPI may have been finalized since the first one.
  if (finalized()) {
    throw Error(Error::Code::Backend, "MPI was already finalized in this process; MPI cannot be initialized again");
  }
  static MpiRuntime runtime;
  return runtime;
}

bool MpiRuntime::finalized() {
  int done = 0;
  MPI_Finalized(&done);
  return done != 0;
}

MpiRuntime::MpiRuntime() {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (initialised) return;  // the program's MPI, at the program's thread level
  int provided = 0;
  const char* threads = std::getenv(contract::kEnvMpiThreads);
  const bool multiple = threads && std::string(threads) == "multiple";
  check_mpi(MPI_Init_thread(nullptr, nullptr, multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided),
            "MPI_Init_thread");
  owned_ = true;
  // Registered after MPI_Init_thread, so it runs before anything MPI
  // registered at exit, and before the default communicator is destroyed.
  ::on_exit(&MpiRuntime::finalize_on_success, this);
}

void MpiRuntime::finalize_on_success(int status, void*) {
  if (status == 0 && !finalized()) MPI_Finalize();
}

void check_mpi(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) {
    throw Error(Error::Code::Backend, std::string(call) + ": MPI error " + std::to_string(code));
  }
  throw Error(Error::Code::Backend, std::string(call) + ": " + std::string(text, static_cast<std::size_t>(length)));
}

}  // namespace trainrun::detail
