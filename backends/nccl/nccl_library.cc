#include "backends/nccl/nccl_library.h"

#include <optional>

#include "backends/nccl/nccl_errors.h"
#include "backends/nccl/shared_library.h"
#include "trainrun/error.h"

#ifndef TRAINRUN_NCCL_LIBDIR
#error "meson passes TRAINRUN_NCCL_LIBDIR, the directory where the build found NCCL"
#endif

namespace trainrun::detail {
namespace {

struct Loaded {
  std::optional<NcclLibrary> nccl;
  std::string error;
};

std::string version_text(int code) {
  // NCCL_VERSION(X,Y,Z): X*10000 + Y*100 + Z from 2.9 on.
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." + std::to_string(code % 100);
}

}  // namespace

const NcclLibrary& NcclLibrary::load() {
  static const Loaded loaded = [] {
    Loaded out;
    std::string error;
    auto library = SharedLibrary::open(kLibrary, TRAINRUN_NCCL_LIBDIR, error);
    if (!library) {
      out.error = "NCCL is not installed here (" + error + ")";
      return out;
    }
    NcclLibrary nccl;
    bool ok = true;
#define TRAINRUN_NCCL_RESOLVE(fn) ok = ok && library->resolve(nccl.fn, TRAINRUN_SYMBOL(fn), error);
    TRAINRUN_NCCL_FUNCTIONS(TRAINRUN_NCCL_RESOLVE)
#undef TRAINRUN_NCCL_RESOLVE
    nccl.path_ = library->path();
    if (ok && nccl.ncclGetVersion(&nccl.version_) != ncclSuccess) {
      ok = false;
      error = nccl.path_ + ": ncclGetVersion failed";
    }
    if (ok && nccl.version_ < kMinVersion) {
      ok = false;
      error = nccl.describe() + " is too old: trainrun needs NCCL " + version_text(kMinVersion) + " or newer";
    }
    if (ok) {
      out.nccl = nccl;
    } else {
      out.error = error;
    }
    return out;
  }();
  if (!loaded.nccl) throw Error(Error::Code::Unsupported, loaded.error);
  return *loaded.nccl;
}

Error NcclLibrary::error(ncclResult_t result, const char* call, ncclComm_t comm) const {
  return nccl_error(result, call, ncclGetErrorString(result), ncclGetLastError(comm));
}

std::string NcclLibrary::describe() const { return "NCCL " + version_text(version_) + " (" + path_ + ")"; }

}  // namespace trainrun::detail
