// NcclBackend: the Backend interface (backends/backend.h) over one NCCL
// communicator on one CUDA device, for CUDA buffers; RoutedBackend sends
// them here. Every op is native NCCL: Float16/BFloat16 and Average
// (ncclAvg) included; allgatherv is grouped broadcasts, alltoall grouped
// send/recv, reducescatter with uneven counts grouped reduces.
// Types: Bool is bytes of 0 or 1, reduced by ncclMax ("or": Sum, Average,
// Max) or ncclMin ("and": Min, Product). NCCL has no 16-bit integer type:
// Int16 is moved as bytes, and reducing it is Error(Unsupported).
//
// Streams: a collective is enqueued on the communicator's own stream and
// returns at once; synchronize() waits for everything enqueued. That stream
// is a blocking stream: it starts after work already queued on the legacy
// default stream, and the legacy stream's later work waits for it (as with
// cudaMemcpy). Work on other streams, per-thread default streams included,
// must be complete before a collective reads its buffers. The core API
// (Communicator) calls synchronize() after every collective, so it blocks
// as on every other backend; barrier() always blocks.
//
// Failures: every ncclResult_t and CUresult becomes Error (nccl_errors.h).
// The communicator is nonblocking (ncclConfig_t::blocking = 0), so no call
// waits inside NCCL: start-up and every wait poll ncclCommGetAsyncError and
// the stream. On an error, after World::nccl_timeout (TRAINRUN_NCCL_TIMEOUT,
// default 10 min) or after abort(), the communicator is aborted
// (ncclCommAbort) before Error is thrown, so no rank waits in NCCL forever;
// every later call fails.
//
// Thread safety: one thread at a time, any thread (the device's context is
// made current for each call and restored after); abort() from any thread.
// Ownership: owns the communicator, its stream, a barrier word of device
// memory and a reference on the device's primary context.
#pragma once

#include <atomic>
#include <chrono>
#include <string>

#include "backends/backend.h"
#include "backends/nccl/cuda_driver.h"
#include "backends/nccl/nccl_library.h"
#include "trainrun/error.h"

namespace trainrun::detail {

class NcclBackend final : public Backend {
 public:
  // Collective: every rank of `world` calls it with the same `id`. Leaves
  // `device`'s primary context current on the calling thread, as
  // cudaSetDevice(device) would, so later allocations there land on it.
  NcclBackend(const World& world, const NcclLibrary& nccl, const CudaDriver& driver, int device,
              const ncclUniqueId& id);
  ~NcclBackend() override;
  NcclBackend(const NcclBackend&) = delete;
  NcclBackend& operator=(const NcclBackend&) = delete;

  std::string name() const override { return "nccl"; }
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
  void abort() noexcept override;
  // Never called: a process set's NCCL communicator is a new one, made by
  // the set's RoutedBackend with its own ncclUniqueId (CudaSupport::open_nccl).
  std::unique_ptr<Backend> subset(const std::vector<int>& ranks, World* member, const std::string& set) override;
  // The communicator's stream: work enqueued on it runs in order with the collectives.
  CUstream stream() const { return stream_; }

 private:
  // Checks that the communicator is usable, makes the context current and
  // enqueues what `calls` issues (a result, or the first failing one).
  template <typename Calls>
  void enqueue(const char* call, Calls&& calls);
  // Waits out ncclInProgress; aborts and throws on any failure.
  void settle(ncclResult_t result, const char* call);
  // Polls `done` until true; aborts and throws at the deadline or on abort().
  template <typename Done>
  void wait_for(const char* call, Done&& done);
  [[noreturn]] void fail(const Error& error);
  void destroy() noexcept;

  const NcclLibrary& nccl_;
  const CudaDriver& driver_;
  const int rank_;
  const int size_;
  const std::chrono::milliseconds timeout_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  CUdeviceptr barrier_word_ = 0;
  ncclComm_t comm_ = nullptr;
  bool pending_ = false;        // work enqueued since the last synchronize()
  const char* last_call_ = "";  // named when waiting for it fails
  std::string broken_;          // why the communicator was aborted; "" while healthy
  std::atomic<bool> abort_requested_{false};
};

}  // namespace trainrun::detail
