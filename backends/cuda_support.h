// CudaSupport: what RoutedBackend needs from CUDA, behind an interface so
// that a build without the CUDA headers has none (every buffer is then host
// memory). Implemented in backends/nccl/ over the CUDA driver and NCCL,
// both loaded at run time. Used from the thread that uses the backend; owns
// the staging memory it hands out, which stays valid until the next call.
#pragma once

#include <cstddef>
#include <memory>

#include "backends/backend.h"
#include "backends/device_fusion.h"
#include "backends/routing.h"

namespace trainrun::detail {

class CudaSupport {
 public:
  virtual ~CudaSupport() = default;

  // False until this process loads the CUDA driver: before, it owns no
  // CUDA memory and nothing needs inspecting. ~30 ns.
  virtual bool driver_loaded() = 0;
  // Host memory for anything CUDA does not know. Only after driver_loaded();
  // never initialises CUDA and never creates a context.
  virtual BufferInfo inspect(const void* pointer) = 0;
  // Synchronous copy between host and CUDA memory (either way, or CUDA to
  // CUDA), ordered after work already queued on the legacy default stream.
  virtual void copy(void* to, const void* from, std::size_t bytes) = 0;
  // Pinned host memory of at least `bytes`, allocated in the context of
  // `device_buffer`; reused and grown from call to call, never per call.
  virtual void* staging(std::size_t bytes, const void* device_buffer) = 0;
  // Device memory of at least `bytes` on the device of `device_buffer`, reused.
  virtual void* device_scratch(std::size_t bytes, const void* device_buffer) = 0;
  // The engine's fusion buffer: as device_scratch, but its own memory.
  virtual void* fusion_buffer(std::size_t bytes, const void* device_buffer) = 0;
  // DeviceFusion::enqueue_copies, on the NCCL communicator's stream once
  // open_nccl made one, else on a blocking stream of this CudaSupport's
  // (the staged path's cuMemcpy, on the legacy stream, waits for it).
  virtual void enqueue_copies(const std::vector<DeviceCopy>& copies) = 0;

  // Agrees with every other rank how CUDA buffers travel: collective, every
  // rank calls it at the same point (its first CUDA buffer, or start-up
  // under policy Nccl). Returns the NCCL backend, or a null backend when
  // CUDA buffers are staged. Throws Error saying why the ranks cannot agree.
  struct Nccl {
    std::unique_ptr<Backend> backend;
    int device = -1;  // the CUDA device its communicator uses
  };
  virtual Nccl open_nccl(const BackendContext& context, Backend& host, CudaPolicy policy) = 0;
  // A new, empty CudaSupport of the same kind, for a process set's backend
  // (whose NCCL communicator open_nccl makes among the set's ranks).
  virtual std::unique_ptr<CudaSupport> fresh() const = 0;
};

}  // namespace trainrun::detail
