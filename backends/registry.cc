#include "backends/registry.h"

#include <algorithm>

#include "backends/routed_backend.h"
#include "backends/tcp/tcp_backend.h"
#include "trainrun/error.h"
#include "trainrun_config.h"

#if TRAINRUN_HAVE_NCCL
#include "backends/nccl/nccl_cuda_support.h"
#endif
#if TRAINRUN_HAVE_MPI
#include "backends/mpi/mpi_backend.h"
#endif

namespace trainrun::detail {
namespace {

// Names only: cheap, unlike built_backends() (backend_versions.h), which
// probes NCCL.
std::vector<std::string> built_names() {
  std::vector<std::string> names{"tcp"};
#if TRAINRUN_HAVE_MPI
  names.push_back("mpi");
#endif
#if TRAINRUN_HAVE_NCCL
  names.push_back("nccl");
#endif
  return names;
}

bool is_built(const std::string& name) {
  const auto names = built_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

[[noreturn]] void not_available(const std::string& name, const std::string& hint = "") {
  std::string built;
  for (const auto& b : built_names()) built += (built.empty() ? "" : ", ") + b;
  throw Error(Error::Code::InvalidArgument,
              "backend '" + name + "' is not available (this build has: " + built + hint + ")");
}

// The backend for host buffers when the user did not choose a CPU backend.
std::string default_cpu_backend(const World& world) {
  const bool under_engine = world.source == World::Source::OpenMpi || world.source == World::Source::Slurm;
  if (under_engine && is_built("mpi")) return "mpi";
  return "tcp";
}

std::unique_ptr<Backend> create_cpu_backend(const std::string& name, const BackendContext& context) {
  if (name == "tcp") return make_tcp_backend(context);
#if TRAINRUN_HAVE_MPI
  if (name == "mpi") return make_mpi_backend(context);
#endif
  not_available(name);
}

std::unique_ptr<CudaSupport> make_cuda_support() {
#if TRAINRUN_HAVE_NCCL
  return std::make_unique<NcclCudaSupport>();
#else
  return nullptr;  // without the CUDA headers every buffer is host memory
#endif
}

}  // namespace

std::string choose_backend(const World& world) {
  if (!world.backend.empty()) return world.backend;
  return default_cpu_backend(world);
}

std::unique_ptr<Backend> create_backend(const std::string& name, const BackendContext& context) {
  const bool nccl = name == "nccl";
  if (nccl && !is_built(name)) not_available(name, "; build with the CUDA toolkit and NCCL: meson -Dnccl=enabled");
  // NCCL moves CUDA buffers only: host buffers, and NCCL's start-up without
  // a rendezvous, need a CPU backend beside it.
  auto host = create_cpu_backend(nccl ? default_cpu_backend(context.world) : name, context);
  const CudaPolicy policy = nccl ? CudaPolicy::Nccl : cuda_policy(context.world.backend);
  return std::make_unique<RoutedBackend>(context, name, std::move(host), make_cuda_support(), policy);
}

}  // namespace trainrun::detail
