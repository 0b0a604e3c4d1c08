#include "backends/registry.h"

#include "trainrun/error.h"
#include "trainrun_config.h"

#if TRAINRUN_HAVE_GLOO
#include "backends/gloo/gloo_backend.h"
#endif
#if TRAINRUN_HAVE_MPI
#include "backends/mpi/mpi_backend.h"
#endif

namespace trainrun::detail {

std::vector<BackendInfo> built_backends() {
  std::vector<BackendInfo> out;
#if TRAINRUN_HAVE_GLOO
  out.push_back({"gloo", gloo_version()});
#endif
#if TRAINRUN_HAVE_MPI
  out.push_back({"mpi", mpi_version()});
#endif
  return out;
}

std::string choose_backend(const World& world) {
  if (!world.backend.empty()) return world.backend;
  const auto built = built_backends();
  auto has = [&](const char* name) {
    for (const auto& b : built) {
      if (b.name == name) return true;
    }
    return false;
  };
  const bool under_engine = world.source == World::Source::OpenMpi || world.source == World::Source::Slurm;
  if (under_engine && has("mpi")) return "mpi";
  if (has("gloo")) return "gloo";
  if (has("mpi")) return "mpi";
  throw Error(Error::Code::Unsupported, "this trainrun was built without any CPU backend");
}

std::unique_ptr<Backend> create_backend(const std::string& name, const BackendContext& context) {
#if TRAINRUN_HAVE_GLOO
  if (name == "gloo") return make_gloo_backend(context);
#endif
#if TRAINRUN_HAVE_MPI
  if (name == "mpi") return make_mpi_backend(context);
#endif
  std::string built;
  for (const auto& b : built_backends()) built += (built.empty() ? "" : ", ") + b.name;
  throw Error(Error::Code::InvalidArgument,
              "backend '" + name + "' is not available (this build has: " +
                  (built.empty() ? "none" : built) + ")");
}

}  // namespace trainrun::detail
