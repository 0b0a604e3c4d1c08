// NcclCudaSupport: CudaSupport over the CUDA driver and NCCL, both loaded at
// run time: tells CUDA memory from host memory with the driver's pointer
// query (only once the process has loaded the driver), stages CUDA buffers
// through pinned host memory, and starts the NCCL backend once every rank
// has said whether it can run NCCL (through the rendezvous store).
// Used from one thread at a time, the backend's. Owns its pinned staging
// memory, device scratch and the engine's device fusion buffer, each grown
// on demand and reused, and the staged path's copy stream.
#pragma once

#include <cuda.h>

#include <memory>
#include <string>
#include <vector>

#include "backends/cuda_support.h"
#include "backends/nccl/cuda_driver.h"

namespace trainrun::detail {

class NcclCudaSupport final : public CudaSupport {
 public:
  NcclCudaSupport() = default;
  ~NcclCudaSupport() override;
  NcclCudaSupport(const NcclCudaSupport&) = delete;
  NcclCudaSupport& operator=(const NcclCudaSupport&) = delete;

  bool driver_loaded() override;
  BufferInfo inspect(const void* pointer) override;
  void copy(void* to, const void* from, std::size_t bytes) override;
  void* staging(std::size_t bytes, const void* device_buffer) override;
  void* device_scratch(std::size_t bytes, const void* device_buffer) override;
  void* fusion_buffer(std::size_t bytes, const void* device_buffer) override;
  void enqueue_copies(const std::vector<DeviceCopy>& copies) override;
  Nccl open_nccl(const BackendContext& context, Backend& host, CudaPolicy policy) override;
  std::unique_ptr<CudaSupport> fresh() const override { return std::make_unique<NcclCudaSupport>(); }

 private:
  struct Allocation {
    void* pointer = nullptr;
    std::size_t bytes = 0;
    CUcontext context = nullptr;
    bool pinned = false;  // host memory from cuMemHostAlloc, else device memory
  };
  // The context that owns whichever of `a`, `b` is CUDA memory.
  CUcontext context_of(const void* a, const void* b = nullptr);
  void* reserve(Allocation& allocation, std::size_t bytes, const void* device_buffer, bool pinned);
  void release(Allocation& allocation) noexcept;
  // The stream enqueue_copies uses in `context` (see CudaSupport).
  CUstream copy_stream(CUcontext context);
  // The fusion copy kernel (fusion_copy.h) in `context`, loaded at its
  // first use there; null when the build or the driver has none.
  CUfunction copy_kernel(CUcontext context);
  void unload_copy_kernel() noexcept;

  const CudaDriver* driver_ = nullptr;
  unsigned long long loads_checked_ = ~0ull;  // SharedLibrary::loads_so_far() at the last check
  Allocation staging_;
  Allocation scratch_;
  Allocation fusion_;
  CUstream nccl_stream_ = nullptr;  // the NCCL backend's, once open_nccl made it
  CUstream own_stream_ = nullptr;   // the staged path's, made at its first copy
  CUcontext own_stream_context_ = nullptr;
  struct {
    CUcontext context = nullptr;  // where it was loaded (or found missing)
    CUmodule module = nullptr;
    CUfunction function = nullptr;
  } kernel_;
};

// Every rank's start-up record, exchanged through the rendezvous store
// (or, without one, the CPU backend): "ok" (rank 0: "ok" + ncclUniqueId)
// or "no " + why this rank cannot run NCCL.
std::vector<std::string> exchange_nccl_readiness(const BackendContext& context, Backend& host, const std::string& mine);

// What `trainrun --check-build` says about NCCL on this host: its version,
// file, CUDA driver and GPU count, or why it cannot run here.
std::string describe_nccl();

}  // namespace trainrun::detail
