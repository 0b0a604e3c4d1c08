// DeviceFusion: what the engine needs to fuse CUDA tensors (docs/design.md
// §5.2): a fusion buffer in device memory and copies into and out of it,
// ordered with the collective that reduces it. The engine plans and packs;
// the backend that owns the CUDA streams provides this. Used from the
// backend's thread, like the Backend that hands it out.
#pragma once

#include <cstddef>
#include <vector>

namespace trainrun::detail {

struct DeviceCopy {
  void* to;
  const void* from;
  std::size_t bytes;
};

class DeviceFusion {
 public:
  virtual ~DeviceFusion() = default;
  // Device memory of at least `bytes` on the device of `like` (a CUDA
  // buffer the batch holds), kept and reused from batch to batch. Decides
  // the job's CUDA path first, as the first CUDA collective would.
  virtual void* fusion_buffer(std::size_t bytes, const void* like) = 0;
  // Enqueues device-to-device copies (one kernel launch where the build has
  // the kernel) on the stream this rank's next CUDA collective runs on:
  // they start after work the caller queued on the legacy default stream,
  // the collective after them, and copies enqueued after a collective after
  // it. Returns at once; later legacy-stream work waits for them.
  virtual void enqueue_copies(const std::vector<DeviceCopy>& copies) = 0;
};

}  // namespace trainrun::detail
