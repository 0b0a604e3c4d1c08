#include "backends/gloo/gloo_backend.h"


#include <cstring>
#include <gloo/alltoallv.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/config.h>
#include <gloo/transport/tcp/device.h>

#include "backends/gloo/direct_collectives.h"
#include "backends/gloo/mesh_context.h"
#include "backends/gloo/socket_mesh.h"
#include "backends/reduction.h"
#include "rendezvous/auth.h"
#include "rendezvous/interfaces.h"
#include "rendezvous/kv_request.h"
#include "rendezvous/net.h"
#include "rendezvous/store.h"
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

// Broadcasts up to this size take the direct path (SocketMesh on the
// calling thread); above it Gloo's pipelined broadcast is bandwidth-bound.
constexpr std::size_t kDirectBroadcastMaxBytes = 256 * 1024;

class GlooBackend final : public Backend {
 public:
  explicit GlooBackend(const BackendContext& context)
      : rank_(context.world.rank), size_(context.world.size),
        timeout_(context.world.collective_timeout), store_(context.store) {
    if (size_ == 1) return;  // every collective is a local copy
    const auto secret = rendezvous::secret_from_hex(context.world.secret_hex);
    if (!store_ || !secret) {
      throw Error(Error::Code::InvalidArgument,
                  "the gloo backend needs a rendezvous (start the job with trainrun, or set "
                  "TRAINRUN_RENDEZVOUS_ADDR/PORT/SECRET)");
    }
    gloo::transport::tcp::attr attr;
    const std::string address = context.world.network.empty()
                                    ? net::local_address_toward(context.world.rendezvous_addr)
                                    : net::address_in_network(context.world.network);
    if (!context.world.iface.empty()) {
      attr.iface = context.world.iface;
    } else {
      attr.hostname = address;
    }
    guarded([&] {
      device_ = gloo::transport::tcp::CreateDevice(attr);
      context_ = std::make_shared<MeshContext>(rank_, size_);
      context_->setTimeout(timeout_);
      mesh_ = std::make_unique<SocketMesh>(rank_, size_, *secret, timeout_);
      // One rendezvous exchange carries both transports' addresses.
      const std::string scope = "gloo." + std::to_string(context.generation);
      const std::string mine = rendezvous::encode_frames(
          {context_->create_pairs(device_), mesh_->listen(device_address())});
      store_->set(scope, "addr." + std::to_string(rank_), mine);
      const auto blobs = store_->get_range(scope, "addr.", 0, static_cast<std::uint64_t>(size_),
                                           context.world.start_timeout);
      std::vector<std::string> gloo_blobs, mesh_addresses;
      for (int peer = 0; peer < size_; ++peer) {
        auto parts = rendezvous::decode_frames(blobs[peer], 2);
        if (!parts) {
          throw Error(Error::Code::Internal,
                      "rendezvous: rank " + std::to_string(peer) + " published a malformed address blob");
        }
        gloo_blobs.push_back(std::move((*parts)[0]));
        mesh_addresses.push_back(std::move((*parts)[1]));
      }
      context_->connect_pairs(gloo_blobs);
      mesh_->connect(mesh_addresses, context.world.start_timeout);
    });
  }

  ~GlooBackend() override {
    context_.reset();
    device_.reset();
  }

  // The address Gloo's device bound to (the interface's, under TRAINRUN_IFACE).
  std::string device_address() const {
    // e.g. "tcp, pci=, iface=eth0, speed=10000, addr=[10.0.0.2]"
    const std::string description = device_->str();
    const std::size_t at = description.find("addr=[");
    if (at == std::string::npos) return "127.0.0.1";
    const std::size_t start = at + 6;
    return description.substr(start, description.find(']', start) - start);
  }

  std::string name() const override { return "gloo"; }

  void allreduce(const void* send, void* recv, std::size_t count, DataType type,
                 ReduceOp op) override {
    const std::size_t bytes = count * size_of(type);
    if (size_ == 1 || count == 0) return copy(send, recv, bytes);
    copy(send, recv, bytes);
    direct_allreduce(*mesh_, recv, count, size_of(type), reduce_function(type, op), scratch_);
    if (op == ReduceOp::Average) divide_in_place(recv, count, type, size_);
  }

  void allgather(const void* send, void* recv, std::size_t count, DataType type) override {
    allgatherv(send, recv, std::vector<std::size_t>(static_cast<std::size_t>(size_), count), type);
  }

  void allgatherv(const void* send, void* recv, const std::vector<std::size_t>& counts,
                  DataType type) override {
    const std::size_t element = size_of(type);
    std::size_t before = 0;
    for (int r = 0; r < rank_; ++r) before += counts[r];
    copy(send, static_cast<char*>(recv) + before * element, counts[rank_] * element);
    if (size_ > 1) direct_allgatherv(*mesh_, recv, counts, element);
  }

  void broadcast(void* buf, std::size_t count, DataType type, int root) override {
    if (size_ == 1 || count == 0) return;
    if (count * size_of(type) <= kDirectBroadcastMaxBytes) {
      return direct_broadcast(*mesh_, buf, count * size_of(type), root);
    }
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
    direct_reducescatter(*mesh_, send, recv, counts, element, reduce_function(type, op), work_, scratch_);
    if (op == ReduceOp::Average) divide_in_place(recv, counts[rank_], type, size_);
  }

  void barrier() override {
    if (size_ > 1) direct_barrier(*mesh_);
  }

  void synchronize() override {}

  void abort() noexcept override {
    if (mesh_) mesh_->abort();
    try {
      if (context_) context_->closeConnections();
    } catch (...) {
    }
  }

 private:
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
  std::unique_ptr<SocketMesh> mesh_;  // latency-bound collectives
  std::uint32_t tag_ = 0;
  std::vector<char> scratch_;   // direct allreduce receive segment, reused
  std::vector<char> work_;      // reduce-scatter input in ring order, reused
};

}  // namespace

std::unique_ptr<Backend> make_gloo_backend(const BackendContext& context) {
  return std::make_unique<GlooBackend>(context);
}

std::string gloo_version() {
  return "Gloo " + std::to_string(GLOO_VERSION_MAJOR) + "." + std::to_string(GLOO_VERSION_MINOR) +
         "." + std::to_string(GLOO_VERSION_PATCH) + " (tcp)";
}

}  // namespace trainrun::detail
