#include "backends/tcp/tcp_backend.h"

#include <cstring>

#include "backends/reduction.h"
#include "backends/tcp/as_backend_error.h"
#include "backends/tcp/direct_alltoall.h"
#include "backends/tcp/direct_collectives.h"
#include "backends/tcp/tcp_transports.h"
#include "backends/tcp/two_level_allgather.h"
#include "backends/tcp/two_level_allreduce.h"
#include "backends/tcp/two_level_reducescatter.h"

namespace trainrun::detail {
namespace {

// Routes each collective to the transport that carries it: shared memory
// on one host, two-level across hosts where it pays, else the TCP mesh.
class TcpBackend final : public Backend {
 public:
  explicit TcpBackend(const BackendContext& context)
      : rank_(context.world.rank), size_(context.world.size), store_(context.store), generation_(context.generation),
        scope_("tcp." + std::to_string(context.generation) + context.set) {
    guarded([&] { t_ = connect_tcp_transports(context, scope_); });
  }

  std::string name() const override { return "tcp"; }

  void allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) override {
    guarded([&] {
      const std::size_t bytes = count * size_of(type);
      if (size_ == 1 || count == 0) return copy(send, recv, bytes);
      const ReduceFn reduce = reduce_function(type, op);
      if (t_.shm) {
        t_.shm->allreduce(send ? send : recv, recv, count, size_of(type), reduce);
      } else if (t_.host_shm && bytes >= t_.points.two_level_min) {
        two_level_allreduce(*t_.host_shm, *t_.cross_mesh, t_.points, send ? send : recv, recv, count, size_of(type),
                            reduce, work_, scratch_);
      } else {
        copy(send, recv, bytes);
        direct_allreduce(*t_.mesh, recv, count, size_of(type), reduce, scratch_);
      }
      if (op == ReduceOp::Average) divide_in_place(recv, count, type, size_);
    });
  }

  void allgather(const void* send, void* recv, std::size_t count, DataType type) override {
    allgatherv(send, recv, std::vector<std::size_t>(static_cast<std::size_t>(size_), count), type);
  }

  void allgatherv(const void* send, void* recv, const std::vector<std::size_t>& counts, DataType type) override {
    guarded([&] {
      const std::size_t element = size_of(type);
      if (t_.shm) return t_.shm->allgatherv(send, recv, counts, element);
      std::size_t before = 0;
      for (int r = 0; r < rank_; ++r) before += counts[r];
      copy(send, static_cast<char*>(recv) + before * element, counts[rank_] * element);
      if (t_.host_shm && t_.host_major) {
        std::size_t total = 0;
        for (std::size_t c : counts) total += c;
        const bool replicated = total * element < t_.points.allgather_split_min;
        return two_level_allgatherv(*t_.host_shm, *t_.cross_mesh, recv, counts, element, replicated);
      }
      if (size_ > 1) direct_allgatherv(*t_.mesh, recv, counts, element);
    });
  }

  void broadcast(void* buf, std::size_t count, DataType type, int root) override {
    if (size_ == 1 || count == 0) return;
    guarded([&] {
      if (t_.shm) return t_.shm->broadcast(buf, count * size_of(type), root);
      direct_broadcast(*t_.mesh, buf, count * size_of(type), root);
    });
  }

  void alltoall(const void* send, const std::vector<std::size_t>& send_counts, void* recv,
                const std::vector<std::size_t>& recv_counts, DataType type) override {
    guarded([&] {
      if (size_ == 1) return copy(send, recv, send_counts[0] * size_of(type));
      if (t_.shm) return t_.shm->alltoall(send, send_counts, recv, recv_counts, size_of(type));
      direct_alltoallv(*t_.mesh, send, send_counts, recv, recv_counts, size_of(type), scratch_);
    });
  }

  void reducescatter(const void* send, void* recv, const std::vector<std::size_t>& counts, DataType type,
                     ReduceOp op) override {
    guarded([&] {
      const std::size_t element = size_of(type);
      if (size_ == 1) return copy(send, recv, counts[0] * element);
      const ReduceFn reduce = reduce_function(type, op);
      if (t_.shm) {
        t_.shm->reducescatter(send, recv, counts, element, reduce);
      } else if (t_.host_shm && t_.host_major) {
        two_level_reducescatter(*t_.host_shm, *t_.cross_mesh, t_.points, send, recv, counts, element, reduce, staging_,
                                work_, scratch_);
      } else {
        direct_reducescatter(*t_.mesh, send, recv, counts, element, reduce, work_, scratch_);
      }
      if (op == ReduceOp::Average) divide_in_place(recv, counts[rank_], type, size_);
    });
  }

  void barrier() override {
    guarded([&] {
      if (t_.shm) return t_.shm->barrier();
      if (size_ > 1) direct_barrier(*t_.mesh);
    });
  }

  void synchronize() override {}

  // Over connections of their own (p2p_channel.h), thread-safe.
  void send(const void* buf, std::size_t count, DataType type, int peer, int tag) override {
    guarded([&] { t_.p2p->send(buf, count, type, peer, tag); });
  }
  int recv(void* buf, std::size_t count, DataType type, int peer, int tag) override {
    int from = peer;
    guarded([&] { from = t_.p2p->recv(buf, count, type, peer, tag); });
    return from;
  }

  // A fresh mesh (and shared-memory segment) among the set's ranks, met
  // through the rendezvous under the set's own scope: its traffic never
  // shares a socket with this backend's, so the set's engine and the job's
  // run side by side. Only members take part.
  std::unique_ptr<Backend> subset(const std::vector<int>& ranks, World* member, const std::string& set) override {
    (void)ranks;
    if (!member) return nullptr;
    BackendContext context{*member, store_, generation_, nullptr, set};
    return std::make_unique<TcpBackend>(context);
  }

  void abort() noexcept override { t_.abort(); }
  std::shared_ptr<HostMemory> host_memory() override { return t_.shm ? t_.shm->heaps() : nullptr; }

 private:
  static void copy(const void* from, void* to, std::size_t bytes) {
    if (from && from != to && bytes) std::memmove(to, from, bytes);
  }

  template <typename Fn>
  static void guarded(Fn&& fn) {
    as_backend_error("tcp", std::forward<Fn>(fn));
  }

  const int rank_;
  const int size_;
  std::shared_ptr<rendezvous::Store> store_;
  const int generation_;
  const std::string scope_;  // this communicator's keys in the rendezvous store
  TcpTransports t_;
  std::vector<char> scratch_;  // direct allreduce receive segment, reused
  std::vector<char> work_;     // reduce-scatter input in ring order, reused
  std::vector<char> staging_;  // two-level reducescatter: the host's sum, reused
};

}  // namespace

std::unique_ptr<Backend> make_tcp_backend(const BackendContext& context) {
  return std::make_unique<TcpBackend>(context);
}

std::string tcp_version() {
  return "trainrun's own TCP mesh, shared memory among ranks on one host unless TRAINRUN_SHM=0";
}

}  // namespace trainrun::detail
