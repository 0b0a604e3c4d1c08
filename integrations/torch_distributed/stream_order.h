// StreamOrder: torch's stream semantics for an op on CUDA tensors, kept by
// a backend whose collectives run on trainrun's core. The core reads device
// pointers and orders its NCCL stream and staged copies after the legacy
// default stream, which is torch's default stream; torch's callers may
// work on other streams. Built without CUDA headers, on c10's
// device-generic Event, Stream and StreamGuard (libc10_cuda implements them
// at run time; a CPU-only torch never meets a CUDA tensor).
//   mark()  on the caller's thread, when the op is submitted: an event on
//           the caller's current stream of the tensors' device.
//   run()   on whichever thread runs the op: waits until the caller's
//           stream has reached that event (the inputs are written), runs
//           the op with the device's default stream current (so that the
//           torch ops of a composed collective go where the core's work
//           follows), then waits until that stream has done them. So the
//           Work completes when its tensors are final for every stream,
//           and wait() needs to make no stream wait: it returns when they are.
// Waits poll the event (yield, then 20 us sleeps): c10's events are not
// blocking-sync ones. Immutable after mark(); safe from any thread.
#pragma once

#include <ATen/ATen.h>
#include <c10/core/Device.h>
#include <c10/core/Event.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace trainrun::c10d {

class StreamOrder {
 public:
  // Null when every tensor is on the CPU (nothing to order).
  static std::shared_ptr<const StreamOrder> mark(const std::vector<at::Tensor>& tensors);
  void run(const std::function<void()>& op) const;

  explicit StreamOrder(c10::Device device);

 private:
  c10::Device device_;
  c10::Event ready_;
};

// "" when every defined tensor of `tensors` is on one device; else what
// differs ("cpu and cuda:0"), for the caller's refusal.
std::string mixed_devices(const std::vector<at::Tensor>& tensors);

}  // namespace trainrun::c10d
