#include "backends/nccl/nccl_backend.h"

#include <algorithm>
#include <thread>

#include "contract/environment.h"

namespace trainrun::detail {
namespace {

using Clock = std::chrono::steady_clock;

// NCCL's type for `type`; ncclNumTypes for Int16, which has none.
ncclDataType_t nccl_type(DataType type) {
  switch (type) {
    case DataType::UInt8: return ncclUint8;
    case DataType::Int8: return ncclInt8;
    case DataType::Bool: return ncclUint8;  // 0 or 1, reduced by nccl_op's Max and Min
    case DataType::Int16: break;            // NCCL has no 16-bit integers
    case DataType::Int32: return ncclInt32;
    case DataType::Int64: return ncclInt64;
    case DataType::Float16: return ncclFloat16;
    case DataType::BFloat16: return ncclBfloat16;
    case DataType::Float32: return ncclFloat32;
    case DataType::Float64: return ncclFloat64;
  }
  return ncclNumTypes;
}

// What the ops that only move data (broadcast, allgather, send/recv) pass
// to NCCL: Int16 goes as its bytes, every other type as itself.
struct Moved {
  ncclDataType_t type;
  std::size_t count;
};
Moved moved(DataType type, std::size_t count) {
  if (type == DataType::Int16) return {ncclUint8, count * size_of(type)};
  return {nccl_type(type), count};
}

// The type a reduction passes to NCCL; Error(Unsupported) for Int16, which
// NCCL cannot add or compare, before anything is enqueued.
ncclDataType_t reduced_type(DataType type, const char* call) {
  if (type != DataType::Int16) return nccl_type(type);
  throw Error(Error::Code::Unsupported, std::string(call) + ": nccl cannot reduce " + to_string(type) +
                                            " (NCCL has no 16-bit integer type); reduce int32, or a host buffer");
}

// Bool's Sum and Average are "or", Product "and", as on the CPU backends: on
// bytes of 0 or 1, Max and Min, which never leave 0 or 1 as Sum would.
ncclRedOp_t nccl_op(DataType type, ReduceOp op) {
  if (type == DataType::Bool) return op == ReduceOp::Min || op == ReduceOp::Product ? ncclMin : ncclMax;
  switch (op) {
    case ReduceOp::Sum: return ncclSum;
    case ReduceOp::Average: return ncclAvg;  // integers: sum, then divide truncating toward zero
    case ReduceOp::Min: return ncclMin;
    case ReduceOp::Max: return ncclMax;
    case ReduceOp::Product: return ncclProd;
  }
  return ncclNumOps;
}

const char* at(const void* base, std::size_t bytes) { return static_cast<const char*>(base) + bytes; }
char* at(void* base, std::size_t bytes) { return static_cast<char*>(base) + bytes; }

// Spins while a short collective may finish any moment, then yields, then
// sleeps, so that a long wait does not burn a core.
class Backoff {
 public:
  void pause() {
    if (rounds_ < 2000) ++rounds_;
    if (rounds_ < 200) return;
    if (rounds_ < 2000) return std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }

 private:
  int rounds_ = 0;
};

}  // namespace

NcclBackend::NcclBackend(const World& world, const NcclLibrary& nccl, const CudaDriver& driver, int device,
                         const ncclUniqueId& id)
    : nccl_(nccl), driver_(driver), rank_(world.rank), size_(world.size), timeout_(world.nccl_timeout) {
  try {
    driver_.check(driver_.cuDeviceGet(&device_, device), "cuDeviceGet");
    driver_.check(driver_.cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
    driver_.check(driver_.cuCtxSetCurrent(context_), "cuCtxSetCurrent");
    driver_.check(driver_.cuStreamCreate(&stream_, CU_STREAM_DEFAULT), "cuStreamCreate");
    driver_.check(driver_.cuMemAlloc(&barrier_word_, sizeof(std::int32_t)), "cuMemAlloc");
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    settle(nccl_.ncclCommInitRankConfig(&comm_, size_, id, rank_, &config), "ncclCommInitRank");
  } catch (...) {
    destroy();
    throw;
  }
}

NcclBackend::~NcclBackend() {
  // Finalize flushes what the network proxies still send for this rank, so
  // that peers get their last chunks; abort is the way out when it fails.
  if (comm_ && broken_.empty() && !abort_requested_) {
    try {
      synchronize();
      ScopedCudaContext scope(driver_, context_);
      settle(nccl_.ncclCommFinalize(comm_), "ncclCommFinalize");
      nccl_.ncclCommDestroy(comm_);
      comm_ = nullptr;
    } catch (const Error&) {
      // settle() aborted the communicator
    }
  }
  destroy();
}

void NcclBackend::destroy() noexcept {
  if (!context_) return;
  try {
    ScopedCudaContext scope(driver_, context_);
    if (comm_ && broken_.empty()) nccl_.ncclCommAbort(comm_);
    comm_ = nullptr;
    if (barrier_word_) driver_.cuMemFree(barrier_word_);
    if (stream_) driver_.cuStreamDestroy(stream_);
  } catch (const Error&) {
    // the driver is gone (process exit): nothing left to free
  }
  driver_.cuDevicePrimaryCtxRelease(device_);
  context_ = nullptr;
}

template <typename Calls>
void NcclBackend::enqueue(const char* call, Calls&& calls) {
  if (!broken_.empty()) {
    throw Error(Error::Code::Backend, std::string(call) + ": the NCCL communicator was aborted after: " + broken_);
  }
  if (abort_requested_) fail(Error(Error::Code::Io, std::string(call) + ": aborted"));
  ScopedCudaContext scope(driver_, context_);
  settle(calls(), call);
  pending_ = true;
  last_call_ = call;
}

void NcclBackend::settle(ncclResult_t result, const char* call) {
  if (result == ncclInProgress) {
    wait_for(call, [&] {
      const ncclResult_t query = nccl_.ncclCommGetAsyncError(comm_, &result);
      if (query != ncclSuccess) result = query;
      return result != ncclInProgress;
    });
  }
  if (result != ncclSuccess) fail(nccl_.error(result, call, comm_));
}

template <typename Done>
void NcclBackend::wait_for(const char* call, Done&& done) {
  const auto deadline = Clock::now() + timeout_;
  Backoff backoff;
  while (!done()) {
    if (abort_requested_) fail(Error(Error::Code::Io, std::string(call) + ": aborted"));
    if (Clock::now() > deadline) {
      fail(Error(Error::Code::Timeout,
                 std::string(call) + " did not complete within " +
                     std::to_string(std::chrono::duration_cast<std::chrono::seconds>(timeout_).count()) +
                     " s (did a rank die or stop calling collectives? " + contract::kEnvNcclTimeout +
                     " sets the limit)"));
    }
    backoff.pause();
  }
}

void NcclBackend::fail(const Error& error) {
  if (broken_.empty() && comm_) nccl_.ncclCommAbort(comm_);
  comm_ = nullptr;
  broken_ = error.what();
  pending_ = false;
  throw Error(error.code(), broken_ + " (NCCL communicator aborted)");
}

void NcclBackend::allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) {
  const ncclDataType_t nccl = reduced_type(type, "ncclAllReduce");
  enqueue("ncclAllReduce",
          [&] { return nccl_.ncclAllReduce(send, recv, count, nccl, nccl_op(type, op), comm_, stream_); });
}

void NcclBackend::reduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, int root) {
  const ncclDataType_t nccl = reduced_type(type, "ncclReduce");
  enqueue("ncclReduce",
          [&] { return nccl_.ncclReduce(send, recv, count, nccl, nccl_op(type, op), root, comm_, stream_); });
}

void NcclBackend::allgather(const void* send, void* recv, std::size_t count, DataType type) {
  // In place, NCCL expects this rank's block at its offset in recv: ours too.
  const void* mine = send ? send : at(recv, count * size_of(type) * rank_);
  const Moved m = moved(type, count);
  enqueue("ncclAllGather", [&] { return nccl_.ncclAllGather(mine, recv, m.count, m.type, comm_, stream_); });
}

void NcclBackend::allgatherv(const void* send, void* recv, const std::vector<std::size_t>& counts, DataType type) {
  enqueue("ncclBroadcast (allgatherv)", [&] {
    ncclResult_t first = nccl_.ncclGroupStart();
    std::size_t offset = 0;
    for (int root = 0; root < size_; ++root) {
      char* block = at(recv, offset * size_of(type));
      const void* from = root == rank_ && send ? send : block;
      if (counts[root] > 0 && first == ncclSuccess) {
        const Moved m = moved(type, counts[root]);
        first = nccl_.ncclBroadcast(from, block, m.count, m.type, root, comm_, stream_);
      }
      offset += counts[root];
    }
    const ncclResult_t end = nccl_.ncclGroupEnd();
    return first != ncclSuccess ? first : end;
  });
}

void NcclBackend::broadcast(void* buf, std::size_t count, DataType type, int root) {
  const Moved m = moved(type, count);
  enqueue("ncclBroadcast", [&] { return nccl_.ncclBroadcast(buf, buf, m.count, m.type, root, comm_, stream_); });
}

void NcclBackend::alltoall(const void* send, const std::vector<std::size_t>& send_counts, void* recv,
                           const std::vector<std::size_t>& recv_counts, DataType type) {
  const std::size_t element = size_of(type);
  enqueue("ncclSend/ncclRecv (alltoall)", [&] {
    ncclResult_t first = nccl_.ncclGroupStart();
    std::size_t sent = 0, received = 0;
    for (int peer = 0; peer < size_ && first == ncclSuccess; ++peer) {
      if (send_counts[peer] > 0) {
        const Moved m = moved(type, send_counts[peer]);
        first = nccl_.ncclSend(at(send, sent * element), m.count, m.type, peer, comm_, stream_);
      }
      if (recv_counts[peer] > 0 && first == ncclSuccess) {
        const Moved m = moved(type, recv_counts[peer]);
        first = nccl_.ncclRecv(at(recv, received * element), m.count, m.type, peer, comm_, stream_);
      }
      sent += send_counts[peer];
      received += recv_counts[peer];
    }
    const ncclResult_t end = nccl_.ncclGroupEnd();
    return first != ncclSuccess ? first : end;
  });
}

void NcclBackend::reducescatter(const void* send, void* recv, const std::vector<std::size_t>& counts, DataType type,
                                ReduceOp op) {
  const ncclDataType_t nccl = reduced_type(type, "ncclReduceScatter");
  if (std::all_of(counts.begin(), counts.end(), [&](std::size_t c) { return c == counts[0]; })) {
    return enqueue("ncclReduceScatter", [&] {
      return nccl_.ncclReduceScatter(send, recv, counts[0], nccl, nccl_op(type, op), comm_, stream_);
    });
  }
  enqueue("ncclReduce (reducescatter)", [&] {
    ncclResult_t first = nccl_.ncclGroupStart();
    std::size_t offset = 0;
    for (int root = 0; root < size_; ++root) {
      // nccl.h: "recvbuff may be NULL on all calls except for root device".
      void* into = root == rank_ ? recv : nullptr;
      if (counts[root] > 0 && first == ncclSuccess) {
        first = nccl_.ncclReduce(at(send, offset * size_of(type)), into, counts[root], nccl, nccl_op(type, op), root,
                                 comm_, stream_);
      }
      offset += counts[root];
    }
    const ncclResult_t end = nccl_.ncclGroupEnd();
    return first != ncclSuccess ? first : end;
  });
}

void NcclBackend::barrier() {
  void* word = reinterpret_cast<void*>(barrier_word_);
  enqueue("ncclAllReduce (barrier)",
          [&] { return nccl_.ncclAllReduce(word, word, 1, ncclInt32, ncclSum, comm_, stream_); });
  synchronize();
}

void NcclBackend::synchronize() {
  if (!pending_) return;
  ScopedCudaContext scope(driver_, context_);
  wait_for(last_call_, [&] {
    const CUresult query = driver_.cuStreamQuery(stream_);
    if (query == CUDA_SUCCESS) return true;
    if (query != CUDA_ERROR_NOT_READY) {
      try {
        driver_.check(query, last_call_);
      } catch (const Error& e) {
        fail(e);
      }
    }
    ncclResult_t state = ncclSuccess;
    nccl_.ncclCommGetAsyncError(comm_, &state);
    if (state != ncclSuccess && state != ncclInProgress) fail(nccl_.error(state, last_call_, comm_));
    return false;
  });
  pending_ = false;
}

void NcclBackend::abort() noexcept { abort_requested_ = true; }

std::unique_ptr<Backend> NcclBackend::subset(const std::vector<int>&, World*, const std::string&) {
  throw Error(Error::Code::Internal, "nccl: a process set's NCCL communicator is made by its RoutedBackend");
}

}  // namespace trainrun::detail
