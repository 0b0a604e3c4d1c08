#include "backends/routed_backend.h"

#include <numeric>

#include "contract/environment.h"
#include "trainrun/error.h"

namespace trainrun::detail {
namespace {

std::size_t total(const std::vector<std::size_t>& counts) {
  return std::accumulate(counts.begin(), counts.end(), std::size_t{0});
}

char* at(void* base, std::size_t bytes) { return static_cast<char*>(base) + bytes; }
const char* at(const void* base, std::size_t bytes) { return static_cast<const char*>(base) + bytes; }

}  // namespace

RoutedBackend::RoutedBackend(const BackendContext& context, std::string name, std::unique_ptr<Backend> host,
                             std::unique_ptr<CudaSupport> cuda, CudaPolicy policy)
    : context_(context), name_(std::move(name)), rank_(context.world.rank), host_(std::move(host)),
      cuda_(std::move(cuda)), policy_(policy) {
  if (policy_ == CudaPolicy::Nccl) open_nccl();
}

void RoutedBackend::open_nccl() {
  CudaSupport::Nccl opened = cuda_->open_nccl(context_, *host_, policy_);
  nccl_ = std::move(opened.backend);
  nccl_device_ = opened.device;
  nccl_for_abort_.store(nccl_.get());
  path_ = nccl_ ? CudaPath::Nccl : CudaPath::Staged;
}

RoutedBackend::Routed RoutedBackend::route(const char* role_a, const void* a, const char* role_b, const void* b) {
  if (!cuda_ || !cuda_->driver_loaded()) return {Route::Host, nullptr};
  const BufferInfo where = place_buffers({{role_a, a, cuda_->inspect(a)}, {role_b, b, cuda_->inspect(b)}});
  if (!where.cuda) return {Route::Host, nullptr};
  const void* device_buffer = a ? a : b;
  if (!path_) open_nccl();
  if (*path_ == CudaPath::Staged) return {Route::Staged, device_buffer};
  if (where.device != nccl_device_) {
    throw Error(Error::Code::InvalidArgument,
                "the buffers are on CUDA device " + std::to_string(where.device) +
                    " but this rank's NCCL communicator uses device " + std::to_string(nccl_device_) +
                    " (allocate on that device, or choose it with " + contract::kEnvCudaDevice + ")");
  }
  return {Route::Nccl, device_buffer};
}

const void* RoutedBackend::set_aside(const Routed& routed, const void* send, std::size_t bytes) {
  if (routed.route == Route::Host) {
    host_scratch_.assign(static_cast<const char*>(send), at(send, bytes));
    return host_scratch_.data();
  }
  void* copy = cuda_->device_scratch(bytes, routed.device_buffer);
  cuda_->copy(copy, send, bytes);
  return copy;
}

void RoutedBackend::allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) {
  const Routed r = route("send", send, "recv", recv);
  if (r.route != Route::Staged) return direct(r).allreduce(send, recv, count, type, op);
  const std::size_t bytes = count * size_of(type);
  void* area = cuda_->staging(bytes, r.device_buffer);
  cuda_->copy(area, send, bytes);
  host_->allreduce(area, area, count, type, op);
  cuda_->copy(recv, area, bytes);
}

// Staged, the root's result comes back from the staging area.
void RoutedBackend::reduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, int root) {
  const Routed r = route("send", send, "recv", recv);
  if (r.route != Route::Staged) return direct(r).reduce(send, recv, count, type, op, root);
  const std::size_t bytes = count * size_of(type);
  void* area = cuda_->staging(bytes, r.device_buffer);
  cuda_->copy(area, send, bytes);
  host_->reduce(area, recv ? area : nullptr, count, type, op, root);
  if (recv) cuda_->copy(recv, area, bytes);
}

void RoutedBackend::allgather(const void* send, void* recv, std::size_t count, DataType type) {
  const Routed r = route("send", send, "recv", recv);
  if (r.route != Route::Staged) return direct(r).allgather(send, recv, count, type);
  const std::size_t block = count * size_of(type);
  const std::size_t mine = block * rank_;
  const std::size_t bytes = block * context_.world.size;
  void* area = cuda_->staging(bytes, r.device_buffer);
  cuda_->copy(at(area, mine), send ? send : at(recv, mine), block);
  host_->allgather(nullptr, area, count, type);
  cuda_->copy(recv, area, bytes);
}

void RoutedBackend::allgatherv(const void* send, void* recv, const std::vector<std::size_t>& counts, DataType type) {
  const Routed r = route("send", send, "recv", recv);
  if (r.route != Route::Staged) return direct(r).allgatherv(send, recv, counts, type);
  const std::size_t element = size_of(type);
  const std::size_t mine = element * std::accumulate(counts.begin(), counts.begin() + rank_, std::size_t{0});
  const std::size_t bytes = element * total(counts);
  void* area = cuda_->staging(bytes, r.device_buffer);
  cuda_->copy(at(area, mine), send ? send : at(recv, mine), counts[rank_] * element);
  host_->allgatherv(nullptr, area, counts, type);
  cuda_->copy(recv, area, bytes);
}

void RoutedBackend::broadcast(void* buf, std::size_t count, DataType type, int root) {
  const Routed r = route("buf", buf);
  if (r.route != Route::Staged) return direct(r).broadcast(buf, count, type, root);
  const std::size_t bytes = count * size_of(type);
  void* area = cuda_->staging(bytes, r.device_buffer);
  if (rank_ == root) cuda_->copy(area, buf, bytes);
  host_->broadcast(area, count, type, root);
  if (rank_ != root) cuda_->copy(buf, area, bytes);
}

void RoutedBackend::alltoall(const void* send, const std::vector<std::size_t>& send_counts, void* recv,
                             const std::vector<std::size_t>& recv_counts, DataType type) {
  const Routed r = route("send", send, "recv", recv);
  const std::size_t send_bytes = total(send_counts) * size_of(type);
  if (r.route != Route::Staged) {
    if (send == recv) send = set_aside(r, send, send_bytes);
    return direct(r).alltoall(send, send_counts, recv, recv_counts, type);
  }
  const std::size_t recv_bytes = total(recv_counts) * size_of(type);
  void* area = cuda_->staging(send_bytes + recv_bytes, r.device_buffer);
  cuda_->copy(area, send, send_bytes);
  host_->alltoall(area, send_counts, at(area, send_bytes), recv_counts, type);
  cuda_->copy(recv, at(area, send_bytes), recv_bytes);
}

void RoutedBackend::reducescatter(const void* send, void* recv, const std::vector<std::size_t>& counts, DataType type,
                                  ReduceOp op) {
  const Routed r = route("send", send, "recv", recv);
  const std::size_t send_bytes = total(counts) * size_of(type);
  if (r.route != Route::Staged) {
    if (send == recv) send = set_aside(r, send, send_bytes);
    return direct(r).reducescatter(send, recv, counts, type, op);
  }
  const std::size_t recv_bytes = counts[rank_] * size_of(type);
  void* area = cuda_->staging(send_bytes + recv_bytes, r.device_buffer);
  cuda_->copy(area, send, send_bytes);
  host_->reducescatter(area, at(area, send_bytes), counts, type, op);
  cuda_->copy(recv, at(area, send_bytes), recv_bytes);
}

void RoutedBackend::barrier() { host_->barrier(); }

void* RoutedBackend::fusion_buffer(std::size_t bytes, const void* like) {
  if (route("tensor", like).route == Route::Host) {
    throw Error(Error::Code::Internal, "engine: a CUDA fusion buffer was asked for a batch of host memory");
  }
  return cuda_->fusion_buffer(bytes, like);
}

void RoutedBackend::enqueue_copies(const std::vector<DeviceCopy>& copies) { cuda_->enqueue_copies(copies); }

void RoutedBackend::refuse_cuda(const char* op, const void* buf) {
  if (!buf || !cuda_ || !cuda_->driver_loaded()) return;
  const BufferInfo where = cuda_->inspect(buf);
  if (where.cuda) {
    throw Error(Error::Code::Unsupported, std::string(op) + " takes host buffers; buf is on CUDA device " +
                                              std::to_string(where.device) + " (copy it to the host first)");
  }
}

void RoutedBackend::send(const void* buf, std::size_t count, DataType type, int peer, int tag) {
  refuse_cuda("send", buf);
  host_->send(buf, count, type, peer, tag);
}

int RoutedBackend::recv(void* buf, std::size_t count, DataType type, int peer, int tag) {
  refuse_cuda("recv", buf);
  return host_->recv(buf, count, type, peer, tag);
}

std::unique_ptr<Backend> RoutedBackend::subset(const std::vector<int>& ranks, World* member, const std::string& set) {
  std::unique_ptr<Backend> host = host_->subset(ranks, member, set);
  if (!member) return nullptr;
  BackendContext context{*member, context_.store, context_.generation, nullptr, set};
  return std::make_unique<RoutedBackend>(context, name_, std::move(host), cuda_ ? cuda_->fresh() : nullptr, policy_);
}

void RoutedBackend::synchronize() {
  host_->synchronize();
  if (nccl_) nccl_->synchronize();
}

void RoutedBackend::abort() noexcept {
  host_->abort();
  if (Backend* nccl = nccl_for_abort_.load()) nccl->abort();
}

}  // namespace trainrun::detail
