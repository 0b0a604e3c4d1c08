#include "backends/gloo/gloo_backend.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <gloo/allgather.h>
#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/config.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/types.h>
#include <numeric>

#include "backends/gloo/mesh_context.h"
#include "backends/reduction.h"
#include "trainrun/error.h"

namespace trainrun::detail {
namespace {

// Gloo's option setters are templates over the element type, but only its
// size matters to them (we supply the reduction): dispatch on the size.
template <typename F>
void with_carrier(DataType type, F&& f) {
  switch (size_of(type)) {
    case 1: return f(std::uint8_t{});
    case 2: return f(std::uint16_t{});
    case 4: return f(std::uint32_t{});
    case 8: return f(std::uint64_t{});
  }
}

template <typename T>
T* mut(const void* p) {
  return static_cast<T*>(const_cast<void*>(p));
}

std::vector<std::int64_t> as_int64(const std::vector<std::size_t>& counts) {
  return std::vector<std::int64_t>(counts.begin(), counts.end());
}

// Slot prefix for the algorithms this file implements itself; Gloo's own
// collectives use prefixes 0x01..0x08.
constexpr std::uint8_t kReduceScatterSlotPrefix = 0x40;

class GlooBackend final : public Backend {
 public:
  explicit GlooBackend(const BackendContext& context)
      : rank_(context.world.rank), size_(context.world.size),
        timeout_(context.world.collective_timeout), store_(context.store) {
    if (size_ == 1) return;  // every collective is a local copy
    if (!store_) {
      throw Error(Error::Code::InvalidArgument,
                  "the gloo backend needs a rendezvous (start the job with trainrun, or set "
                  "TRAINRUN_RENDEZVOUS_ADDR/PORT/SECRET)");
    }
    gloo::transport::tcp::attr attr;
    if (!context.world.iface.empty()) {
      attr.iface = context.world.iface;
    } else {
      attr.hostname = local_address_toward(context.world.rendezvous_addr);
    }
    guarded([&] {
      device_ = gloo::transport::tcp::CreateDevice(attr);
      context_ = std::make_shared<MeshContext>(rank_, size_);
      context_->setTimeout(timeout_);
      context_->connect(*store_, "gloo." + std::to_string(context.generation), device_,
                        context.world.start_timeout);
    });
  }

  ~GlooBackend() override {
    context_.reset();
    device_.reset();
  }

  std::string name() const override { return "gloo"; }

  void allreduce(const void* send, void* recv, std::size_t count, DataType type,
                 ReduceOp op) override {
    if (size_ == 1 || count == 0) return copy(send, recv, count * size_of(type));
    guarded([&] {
      with_carrier(type, [&](auto carrier) {
        using T = decltype(carrier);
        gloo::AllreduceOptions opts(context_);
        if (send != recv) opts.setInput(mut<T>(send), count);
        opts.setOutput(static_cast<T*>(recv), count);
        opts.setReduceFunction(reduce_function(type, op));
        opts.setTag(next_tag());
        opts.setTimeout(timeout_);
        gloo::allreduce(opts);
      });
    });
    if (op == ReduceOp::Average) divide_in_place(recv, count, type, size_);
  }

  void allgather(const void* send, void* recv, std::size_t count, DataType type) override {
    const std::size_t bytes = count * size_of(type);
    if (size_ == 1 || count == 0) return copy(send, recv, bytes);
    guarded([&] {
      with_carrier(type, [&](auto carrier) {
        using T = decltype(carrier);
        gloo::AllgatherOptions opts(context_);
        if (send) opts.setInput(mut<T>(send), count);
        opts.setOutput(static_cast<T*>(recv), count * static_cast<std::size_t>(size_));
        opts.setTag(next_tag());
        opts.setTimeout(timeout_);
        gloo::allgather(opts);
      });
    });
  }

  void allgatherv(const void* send, void* recv, const std::vector<std::size_t>& counts,
                  DataType type) override {
    const std::size_t total = std::accumulate(counts.begin(), counts.end(), std::size_t{0});
    if (size_ == 1 || total == 0) return copy(send, recv, counts[0] * size_of(type));
    guarded([&] {
      with_carrier(type, [&](auto carrier) {
        using T = decltype(carrier);
        gloo::AllgathervOptions opts(context_);
        if (send) opts.setInput(mut<T>(send), counts[rank_]);
        opts.setOutput(static_cast<T*>(recv), counts);
        opts.setTag(next_tag());
        opts.setTimeout(timeout_);
        gloo::allgatherv(opts);
      });
    });
  }

  void broadcast(void* buf, std::size_t count, DataType type, int root) override {
    if (size_ == 1 || count == 0) return;
    guarded([&] {
      with_carrier(type, [&](auto carrier) {
        using T = decltype(carrier);
        gloo::BroadcastOptions opts(context_);
        opts.setOutput(static_cast<T*>(buf), count);
        opts.setRoot(root);
        opts.setTag(next_tag());
        opts.setTimeout(timeout_);
        gloo::broadcast(opts);
      });
    });
  }

  void alltoall(const void* send, const std::vector<std::size_t>& send_counts, void* recv,
                const std::vector<std::size_t>& recv_counts, DataType type) override {
    if (size_ == 1) return copy(send, recv, send_counts[0] * size_of(type));
    guarded([&] {
      with_carrier(type, [&](auto carrier) {
        using T = decltype(carrier);
        gloo::AlltoallvOptions opts(context_);
        opts.setInput(mut<T>(send), as_int64(send_counts));
        opts.setOutput(static_cast<T*>(recv), as_int64(recv_counts));
        opts.setTag(next_tag());
        opts.setTimeout(timeout_);
        gloo::alltoallv(opts);
      });
    });
  }

  void reducescatter(const void* send, void* recv, const std::vector<std::size_t>& counts,
                     DataType type, ReduceOp op) override {
    const std::size_t element = size_of(type);
    if (size_ == 1) return copy(send, recv, counts[0] * element);
    guarded([&] { ring_reduce_scatter(send, recv, counts, type, op); });
    if (op == ReduceOp::Average) divide_in_place(recv, counts[rank_], type, size_);
  }

  void barrier() override {
    if (size_ == 1) return;
    guarded([&] {
      gloo::BarrierOptions opts(context_);
      opts.setTag(next_tag());
      opts.setTimeout(timeout_);
      gloo::barrier(opts);
    });
  }

  void synchronize() override {}

  void abort() noexcept override {
    try {
      if (context_) context_->closeConnections();
    } catch (...) {
    }
  }

 private:
  // Ring reduce-scatter: in step k each rank passes its partial sum of block
  // (rank-k-1) to the right and folds the block arriving from the left into
  // its own partial sums; after size-1 steps block `rank` is complete. Each
  // byte crosses each link once, versus twice for allreduce + copy.
  void ring_reduce_scatter(const void* send, void* recv, const std::vector<std::size_t>& counts,
                           DataType type, ReduceOp op) {
    const std::size_t element = size_of(type);
    std::vector<std::size_t> offset(counts.size() + 1, 0);
    std::size_t largest = 0;
    for (std::size_t i = 0; i < counts.size(); ++i) {
      offset[i + 1] = offset[i] + counts[i] * element;
      largest = std::max(largest, counts[i] * element);
    }
    if (offset.back() == 0) return;
    partial_.resize(offset.back());
    incoming_.resize(std::max<std::size_t>(largest, 1));
    std::memcpy(partial_.data(), send, offset.back());
    auto partial = context_->createUnboundBuffer(partial_.data(), partial_.size());
    auto incoming = context_->createUnboundBuffer(incoming_.data(), incoming_.size());
    const ReduceFn reduce = reduce_function(type, op);
    const std::uint64_t slot = gloo::Slot::build(kReduceScatterSlotPrefix, next_tag());
    const int right = (rank_ + 1) % size_;
    const int left = (rank_ + size_ - 1) % size_;
    for (int step = 0; step < size_ - 1; ++step) {
      const int out_block = (rank_ - step - 1 + 2 * size_) % size_;
      const int in_block = (rank_ - step - 2 + 2 * size_) % size_;
      const std::size_t out_bytes = offset[out_block + 1] - offset[out_block];
      const std::size_t in_bytes = offset[in_block + 1] - offset[in_block];
      if (out_bytes) partial->send(right, slot, offset[out_block], out_bytes);
      if (in_bytes) {
        incoming->recv(left, slot, 0, in_bytes);
        wait(incoming->waitRecv(nullptr, timeout_));
        char* block = partial_.data() + offset[in_block];
        reduce(block, block, incoming_.data(), counts[in_block]);
      }
      if (out_bytes) wait(partial->waitSend(nullptr, timeout_));
    }
    std::memcpy(recv, partial_.data() + offset[rank_], counts[rank_] * element);
  }

  static void wait(bool completed) {
    if (!completed) throw Error(Error::Code::Io, "gloo: operation aborted");
  }

  static void copy(const void* from, void* to, std::size_t bytes) {
    if (from && from != to && bytes) std::memmove(to, from, bytes);
  }

  std::uint32_t next_tag() { return tag_++; }

  // Gloo reports failures as its own exception types: make them ours.
  template <typename Fn>
  void guarded(Fn&& fn) {
    try {
      fn();
    } catch (const Error&) {
      throw;
    } catch (const gloo::IoException& e) {
      const bool timed_out = std::strstr(e.what(), "Timed out") || std::strstr(e.what(), "timed out");
      throw Error(timed_out ? Error::Code::Timeout : Error::Code::Io, std::string("gloo: ") + e.what());
    } catch (const std::exception& e) {
      throw Error(Error::Code::Backend, std::string("gloo: ") + e.what());
    }
  }

  const int rank_;
  const int size_;
  const std::chrono::milliseconds timeout_;
  std::shared_ptr<rendezvous::Store> store_;
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<MeshContext> context_;
  std::uint32_t tag_ = 0;
  std::vector<char> partial_;   // reduce-scatter accumulator, reused
  std::vector<char> incoming_;  // reduce-scatter receive block, reused
};

}  // namespace

std::unique_ptr<Backend> make_gloo_backend(const BackendContext& context) {
  return std::make_unique<GlooBackend>(context);
}

std::string gloo_version() {
  return "Gloo " + std::to_string(GLOO_VERSION_MAJOR) + "." + std::to_string(GLOO_VERSION_MINOR) +
         "." + std::to_string(GLOO_VERSION_PATCH) + " (tcp)";
}

std::string local_address_toward(const std::string& host) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* result = nullptr;
  if (::getaddrinfo(host.c_str(), "9", &hints, &result) != 0 || !result) {
    throw Error(Error::Code::Io, "cannot resolve rendezvous host '" + host + "' to pick an interface");
  }
  const int fd = ::socket(result->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_storage local{};
  socklen_t length = sizeof local;
  const bool ok = fd >= 0 && ::connect(fd, result->ai_addr, result->ai_addrlen) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0;
  const int err = errno;
  if (fd >= 0) ::close(fd);
  ::freeaddrinfo(result);
  if (!ok) {
    throw Error(Error::Code::Io, "no route to rendezvous host '" + host + "': " + std::strerror(err));
  }
  char text[INET6_ADDRSTRLEN] = {};
  const void* address = local.ss_family == AF_INET6
                            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr)
                            : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&local)->sin_addr);
  ::inet_ntop(local.ss_family, address, text, sizeof text);
  return text;
}

}  // namespace trainrun::detail
