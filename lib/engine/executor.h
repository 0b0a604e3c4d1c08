// Executor: runs planned batches on the backend, on the engine thread:
// packs a fused batch into the fusion buffer, reduces it with one backend
// call and unpacks it; runs everything else alone, in place where the op
// allows. A batch of CUDA tensors packs into the backend's device fusion
// buffer (backends/device_fusion.h) with batched device copies, enqueued in
// stream order with the reduction: nothing waits for the device here, as
// an unfused CUDA allreduce does not. A rank that has joined has no Work for an op and contributes
// neutral input (the reduce op's identity, or no rows). The fusion buffer
// comes from the backend's host memory where it has some (the host's ranks
// reduce it in place, backends/host_memory.h), else is mapped once
// (MADV_HUGEPAGE: first touch of 4 KiB pages runs at ~1.3 GB/s here); it is
// reused. Not thread-safe; owned by the Engine.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "lib/engine/fusion_planner.h"
#include "lib/engine/timeline.h"
#include "lib/engine/work.h"

namespace trainrun::detail {

class Executor {
 public:
  // Records into `timeline` while it is active.
  Executor(Backend& backend, int rank, int size, std::size_t fusion_threshold, Timeline& timeline);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // works[i] is this rank's Work for batch.items[i] (null: this rank joined).
  // Results go to the Works (tensors in place, or Operation::output).
  // Backend errors propagate.
  void run(const Batch& batch, const std::vector<Response>& responses, const std::vector<Work*>& works);

 private:
  void allreduce_fused(const Batch& batch, const Request& r, const std::vector<Work*>& works,
                       const std::vector<std::string>& names);
  void allreduce_fused_on_device(const Batch& batch, const Request& r, const std::vector<Work*>& works,
                                 const std::vector<std::string>& names);
  // Runs `fn` inside a timeline span `phase` of every tensor in `names`.
  template <typename Fn>
  void traced(const std::vector<std::string>& names, const std::string& phase, Fn&& fn);
  void allreduce_alone(const FusionItem& item, const Request& r, Work* work, const std::string& name);
  void allgather(const Request& r, Work* work);
  void alltoall(const Request& r, Work& work);
  void reducescatter(const Request& r, Work* work);
  // Memory for a joined rank's neutral input, or for the fusion buffer.
  char* scratch(std::size_t bytes);
  std::string label(OpType op) const;  // e.g. TCP_ALLREDUCE

  Backend& backend_;
  const int rank_;
  const int size_;
  const std::size_t fusion_threshold_;
  Timeline& timeline_;
  const std::string backend_name_;
  void* buffer_ = nullptr;  // the fusion buffer, mapped (or from the backend's heap) on first use
  bool from_heap_ = false;
  std::size_t capacity_ = 0;
  std::vector<char> spare_;  // scratch larger than the fusion buffer
};

}  // namespace trainrun::detail
