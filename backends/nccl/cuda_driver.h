// CudaDriver: the CUDA driver API entry points trainrun uses, resolved from
// libcuda.so.1 at run time (see SharedLibrary). The driver API rather than
// the runtime because every GPU host has it whatever CUDA runtime a program
// was built with, because its pointer queries need no current context and
// create none (the runtime's would put a context on GPU 0 in every rank),
// and because it works with the primary contexts the runtime and NCCL use.
// The table is immutable once loaded; safe from any thread.
#pragma once

#include <cuda.h>

#include <string>

namespace trainrun::detail {

// Names expand through cuda.h's macros (cuMemcpyHtoD -> cuMemcpyHtoD_v2),
// so a member, its type and the symbol it is resolved from always agree.
// (clang-format does not keep an X-macro list stable)
// clang-format off
#define TRAINRUN_CUDA_DRIVER_FUNCTIONS(X)                                                    \
  X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet)                       \
  X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxGetCurrent)              \
  X(cuCtxSetCurrent) X(cuCtxSynchronize) X(cuPointerGetAttributes) X(cuStreamCreate) X(cuStreamDestroy)        \
  X(cuStreamQuery) X(cuMemAlloc) X(cuMemFree) X(cuMemHostAlloc) X(cuMemFreeHost) X(cuMemcpy) \
  X(cuMemcpyDtoDAsync) X(cuModuleLoadData) X(cuModuleGetFunction) X(cuModuleUnload)        \
  X(cuLaunchKernel) X(cuGetErrorName) X(cuGetErrorString)
// clang-format on

class CudaDriver {
 public:
  static constexpr const char* kLibrary = "libcuda.so.1";

  // Loads the driver once per process; throws Error(Unsupported) saying
  // why it cannot (no NVIDIA driver on this host, a symbol missing).
  static const CudaDriver& load();
  // Whether this process loaded the driver already. A process that has
  // not cannot own CUDA memory. Slow when it has not: see SharedLibrary.
  static bool in_process();

  // Throws the Error for `result` (see nccl_errors.h) unless CUDA_SUCCESS.
  void check(CUresult result, const char* call) const;
  // "13.0": the CUDA version the driver supports.
  std::string version() const;

#define TRAINRUN_CUDA_MEMBER(fn) decltype(&::fn) fn = nullptr;
  TRAINRUN_CUDA_DRIVER_FUNCTIONS(TRAINRUN_CUDA_MEMBER)
#undef TRAINRUN_CUDA_MEMBER

 private:
  CudaDriver() = default;
};

// Makes `context` current on this thread for the scope and restores the
// previous one, so that trainrun never moves a thread to another device.
class ScopedCudaContext {
 public:
  ScopedCudaContext(const CudaDriver& driver, CUcontext context);
  ~ScopedCudaContext();
  ScopedCudaContext(const ScopedCudaContext&) = delete;
  ScopedCudaContext& operator=(const ScopedCudaContext&) = delete;

 private:
  const CudaDriver& driver_;
  CUcontext previous_ = nullptr;
  bool switched_ = false;
};

}  // namespace trainrun::detail
