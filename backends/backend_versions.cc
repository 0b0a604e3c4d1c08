#include "backends/backend_versions.h"

#include "backends/tcp/tcp_backend.h"
#include "trainrun_config.h"

#if TRAINRUN_HAVE_NCCL
#include "backends/nccl/nccl_cuda_support.h"
#endif
#if TRAINRUN_HAVE_MPI
#include "backends/mpi/mpi_version.h"
#endif

namespace trainrun::detail {

std::vector<BackendInfo> built_backends() {
  std::vector<BackendInfo> out{{"tcp", tcp_version()}};
#if TRAINRUN_HAVE_NCCL
  out.push_back({"nccl", describe_nccl()});
#endif
#if TRAINRUN_HAVE_MPI
  out.push_back({"mpi", mpi_version()});
#endif
  return out;
}

}  // namespace trainrun::detail
