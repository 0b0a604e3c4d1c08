#include "backends/nccl/cuda_driver.h"

#include <optional>

#include "backends/nccl/nccl_errors.h"
#include "backends/nccl/shared_library.h"
#include "trainrun/error.h"

namespace trainrun::detail {
namespace {

// The loaded table, or why there is none; made once per process.
struct Loaded {
  std::optional<CudaDriver> driver;
  std::string error;
};

}  // namespace

const CudaDriver& CudaDriver::load() {
  static const Loaded loaded = [] {
    Loaded out;
    std::string error;
    // No fallback directory: the driver belongs to the system, not to CUDA's toolkit.
    auto library = SharedLibrary::open(kLibrary, "", error);
    if (!library) {
      out.error = "no NVIDIA driver on this host (" + error + ")";
      return out;
    }
    CudaDriver driver;
    bool ok = true;
#define TRAINRUN_CUDA_RESOLVE(fn) ok = ok && library->resolve(driver.fn, TRAINRUN_SYMBOL(fn), error);
    TRAINRUN_CUDA_DRIVER_FUNCTIONS(TRAINRUN_CUDA_RESOLVE)
#undef TRAINRUN_CUDA_RESOLVE
    if (ok) {
      out.driver = driver;
    } else {
      out.error = error;
    }
    return out;
  }();
  if (!loaded.driver) throw Error(Error::Code::Unsupported, loaded.error);
  return *loaded.driver;
}

bool CudaDriver::in_process() { return SharedLibrary::is_loaded(kLibrary); }

void CudaDriver::check(CUresult result, const char* call) const {
  if (result == CUDA_SUCCESS) return;
  const char* name = nullptr;
  const char* description = nullptr;
  if (cuGetErrorName(result, &name) != CUDA_SUCCESS) name = nullptr;
  if (cuGetErrorString(result, &description) != CUDA_SUCCESS) description = nullptr;
  throw cuda_error(result, call, name, description);
}

std::string CudaDriver::version() const {
  int version = 0;
  check(cuDriverGetVersion(&version), "cuDriverGetVersion");
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

ScopedCudaContext::ScopedCudaContext(const CudaDriver& driver, CUcontext context) : driver_(driver) {
  driver_.check(driver_.cuCtxGetCurrent(&previous_), "cuCtxGetCurrent");
  if (previous_ != context) {
    driver_.check(driver_.cuCtxSetCurrent(context), "cuCtxSetCurrent");
    switched_ = true;
  }
}

ScopedCudaContext::~ScopedCudaContext() {
  if (switched_) driver_.cuCtxSetCurrent(previous_);
}

}  // namespace trainrun::detail
