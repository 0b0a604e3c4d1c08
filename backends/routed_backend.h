// RoutedBackend: the backend that the Communicator and the engine call.
// Host buffers go to the CPU backend (tcp or mpi); CUDA buffers go to NCCL
// or, when the job stages them (see CudaPolicy), through pinned host memory
// to the CPU backend, so the same program runs on a CPU-only tcp job and on
// a GPU job. A CUDA buffer never takes the copying path when the job runs
// NCCL. It also accepts send == recv for alltoall and reducescatter (the
// input is copied aside), so the backends below never see aliased buffers.
// CUDA buffers the engine fuses go through its DeviceFusion: the fusion
// buffer and the copies live with the CUDA support, on the stream of the
// path the job chose.
// Used from one thread at a time, like every Backend; abort() from any.
// Owns the CPU backend, the NCCL backend (made on first use) and the CUDA
// support.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/cuda_support.h"
#include "backends/routing.h"

namespace trainrun::detail {

class RoutedBackend final : public Backend, private DeviceFusion {
 public:
  // `cuda` is null in builds without CUDA. Under CudaPolicy::Nccl the NCCL
  // communicator is made here, collectively; otherwise at the first CUDA buffer.
  RoutedBackend(const BackendContext& context, std::string name, std::unique_ptr<Backend> host,
                std::unique_ptr<CudaSupport> cuda, CudaPolicy policy);

  std::string name() const override { return name_; }
  void allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) override;
  void allgather(const void* send, void* recv, std::size_t count, DataType type) override;
  void allgatherv(const void* send, void* recv, const std::vector<std::size_t>& counts, DataType type) override;
  void broadcast(void* buf, std::size_t count, DataType type, int root) override;
  void reduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, int root) override;
  void alltoall(const void* send, const std::vector<std::size_t>& send_counts, void* recv,
                const std::vector<std::size_t>& recv_counts, DataType type) override;
  void reducescatter(const void* send, void* recv, const std::vector<std::size_t>& counts, DataType type,
                     ReduceOp op) override;
  void barrier() override;
  void synchronize() override;
  // The CPU backend's, thread-safe as it is; a CUDA buffer is
  // Error(Unsupported) (NCCL's point-to-point is not wired).
  void send(const void* buf, std::size_t count, DataType type, int peer, int tag) override;
  int recv(void* buf, std::size_t count, DataType type, int peer, int tag) override;
  void abort() noexcept override;
  // The CPU backend's subset, routed alike; CUDA buffers of the set get an
  // NCCL communicator of their own (a new ncclUniqueId among the set's
  // ranks), made as this one's was: at start under CudaPolicy::Nccl, else
  // at the set's first CUDA buffer.
  std::unique_ptr<Backend> subset(const std::vector<int>& ranks, World* member, const std::string& set) override;
  DeviceFusion* device_fusion() override { return cuda_ ? this : nullptr; }
  std::shared_ptr<HostMemory> host_memory() override { return host_->host_memory(); }

 private:
  void* fusion_buffer(std::size_t bytes, const void* like) override;
  void enqueue_copies(const std::vector<DeviceCopy>& copies) override;

  enum class Route { Host, Nccl, Staged };
  struct Routed {
    Route route;
    const void* device_buffer;  // one of the call's CUDA buffers, unless Host
  };
  // Where one call goes; decides the job's CUDA path at its first CUDA buffer.
  Routed route(const char* role_a, const void* a, const char* role_b = "", const void* b = nullptr);
  void open_nccl();
  void refuse_cuda(const char* op, const void* buf);
  // The backend a Host or Nccl route runs on, buffers as they are.
  Backend& direct(const Routed& routed) { return routed.route == Route::Host ? *host_ : *nccl_; }
  // A copy of `bytes` of `send` in memory of its kind, for aliased calls.
  const void* set_aside(const Routed& routed, const void* send, std::size_t bytes);

  const BackendContext context_;
  const std::string name_;
  const int rank_;
  std::unique_ptr<Backend> host_;
  std::unique_ptr<CudaSupport> cuda_;
  const CudaPolicy policy_;
  std::optional<CudaPath> path_;  // decided at the first CUDA buffer
  std::unique_ptr<Backend> nccl_;
  std::atomic<Backend*> nccl_for_abort_{nullptr};
  int nccl_device_ = -1;
  std::vector<char> host_scratch_;  // set-aside input of aliased host calls
};

}  // namespace trainrun::detail
