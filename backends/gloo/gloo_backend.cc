#include "backends/gloo/gloo_backend.h"

#include <cstdio>
#include <cstring>
#include <new>
#include <stdexcept>
#include <gloo/config.h>

#include "backends/gloo/direct_alltoall.h"
#include "backends/gloo/direct_collectives.h"
#include "backends/gloo/p2p_channel.h"
#include "backends/gloo/socket_mesh.h"
#include "backends/gloo/two_level_allgather.h"
#include "backends/gloo/two_level_allreduce.h"
#include "backends/gloo/two_level_reducescatter.h"
#include "backends/reduction.h"
#include "backends/core_call.h"
#include "backends/shm/shm_collectives.h"
#include "backends/shm/shm_group.h"
#include "rendezvous/auth.h"
#include "rendezvous/interfaces.h"
#include "rendezvous/net.h"
#include "contract/job_records.h"
#include "contract/environment.h"
#include "contract/kv_keys.h"
#include "contract/switch_points.h"
#include "rendezvous/store.h"
#include "trainrun/error.h"

namespace trainrun::detail {
namespace {

class GlooBackend final : public Backend {
 public:
  explicit GlooBackend(const BackendContext& context)
      : rank_(context.world.rank), size_(context.world.size), timeout_(context.world.collective_timeout),
        store_(context.store), generation_(context.generation), members_(context.world.members),
        scope_("gloo." + std::to_string(context.generation) + context.set) {
    if (size_ == 1) return;  // every collective is a local copy
    const auto secret = rendezvous::secret_from_hex(context.world.secret_hex);
    if (!store_ || !secret) {
      throw Error(Error::Code::InvalidArgument,
                  "the gloo backend needs a rendezvous (start the job with trainrun, or set "
                  "TRAINRUN_RENDEZVOUS_ADDR/PORT/SECRET)");
    }
    // This host's address on the job's network: the interface's
    // (TRAINRUN_IFACE), the one in TRAINRUN_NETWORK, or the one that routes
    // to the rendezvous. The mesh binds it.
    const World& world = context.world;
    guarded([&] {
      const std::string address = !world.iface.empty()    ? net::interface_address(world.iface)
                                  : world.network.empty() ? net::local_address_toward(world.rendezvous_addr)
                                                          : net::address_in_network(world.network);
      mesh_ = std::make_unique<SocketMesh>(rank_, size_, *secret, timeout_);
      mesh_->name_ranks(members_);
      store_->set(scope_, "mesh." + std::to_string(rank_), mesh_->listen(address));
      const auto addresses =
          store_->get_range(scope_, "mesh.", 0, static_cast<std::uint64_t>(size_), context.world.start_timeout);
      mesh_->connect(addresses, context.world.start_timeout, context.forming_check);
      peer_addresses_ = addresses;
      p2p_ = std::make_unique<P2PChannel>(P2PChannel::Options{rank_, size_, address, scope_, members_, timeout_,
                                                              world.start_timeout, context.forming_check},
                                          *secret, *store_);
    });
    mesh_->set_wait_warning(context.world.wait_warning,
                            [this, host = context.world.hostname](int peer, std::chrono::seconds waited) {
                              warn_waiting(host, peer, waited);
                            });
    // Spinning on a small receive halves a message between hosts (2 x 1
    // ranks: 8 us against 19 us asleep in poll), but only with a CPU to
    // spare for the network stack: 4 ranks spinning on 2 CPUs took 26-31
    // us against 22 us asleep.
    mesh_->set_spin(shm_spin_budget(context.world.local_size + 1));
    if (context.world.shm) guarded([&] { join_shared_memory(context.world); });
  }

  std::string name() const override { return "gloo"; }

  void allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) override {
    guarded([&] { allreduce_on_transport(send, recv, count, type, op); });
  }

  void allgather(const void* send, void* recv, std::size_t count, DataType type) override {
    allgatherv(send, recv, std::vector<std::size_t>(static_cast<std::size_t>(size_), count), type);
  }

  void allgatherv(const void* send, void* recv, const std::vector<std::size_t>& counts, DataType type) override {
    guarded([&] {
      const std::size_t element = size_of(type);
      if (shm_) return shm_->allgatherv(send, recv, counts, element);
      std::size_t before = 0;
      for (int r = 0; r < rank_; ++r) before += counts[r];
      copy(send, static_cast<char*>(recv) + before * element, counts[rank_] * element);
      if (host_shm_ && host_major_) {
        std::size_t total = 0;
        for (std::size_t c : counts) total += c;
        const bool replicated = total * element < points_.allgather_split_min;
        return two_level_allgatherv(*host_shm_, *cross_mesh_, recv, counts, element, replicated);
      }
      if (size_ > 1) direct_allgatherv(*mesh_, recv, counts, element);
    });
  }

  void broadcast(void* buf, std::size_t count, DataType type, int root) override {
    if (size_ == 1 || count == 0) return;
    guarded([&] {
      if (shm_) return shm_->broadcast(buf, count * size_of(type), root);
      direct_broadcast(*mesh_, buf, count * size_of(type), root);
    });
  }

  void alltoall(const void* send, const std::vector<std::size_t>& send_counts, void* recv,
                const std::vector<std::size_t>& recv_counts, DataType type) override {
    guarded([&] {
      if (size_ == 1) return copy(send, recv, send_counts[0] * size_of(type));
      if (shm_) return shm_->alltoall(send, send_counts, recv, recv_counts, size_of(type));
      direct_alltoallv(*mesh_, send, send_counts, recv, recv_counts, size_of(type), scratch_);
    });
  }

  void reducescatter(const void* send, void* recv, const std::vector<std::size_t>& counts, DataType type,
                     ReduceOp op) override {
    guarded([&] {
      const std::size_t element = size_of(type);
      if (size_ == 1) return copy(send, recv, counts[0] * element);
      if (shm_) {
        shm_->reducescatter(send, recv, counts, element, reduce_function(type, op));
      } else if (host_shm_ && host_major_) {
        two_level_reducescatter(*host_shm_, *cross_mesh_, points_, send, recv, counts, element,
                                reduce_function(type, op), staging_, work_, scratch_);
      } else {
        direct_reducescatter(*mesh_, send, recv, counts, element, reduce_function(type, op), work_, scratch_);
      }
      if (op == ReduceOp::Average) divide_in_place(recv, counts[rank_], type, size_);
    });
  }

  void barrier() override {
    guarded([&] {
      if (shm_) return shm_->barrier();
      if (size_ > 1) direct_barrier(*mesh_);
    });
  }

  void synchronize() override {}

  // Over connections of their own (p2p_channel.h), thread-safe.
  void send(const void* buf, std::size_t count, DataType type, int peer, int tag) override {
    guarded([&] { p2p_->send(buf, count, type, peer, tag); });
  }
  int recv(void* buf, std::size_t count, DataType type, int peer, int tag) override {
    int from = peer;
    guarded([&] { from = p2p_->recv(buf, count, type, peer, tag); });
    return from;
  }

  // A fresh mesh (and shared-memory segment) among the set's ranks, met
  // through the rendezvous under the set's own scope: its traffic never
  // shares a socket with this backend's, so the set's engine and the job's
  // run side by side. Only members take part.
  std::unique_ptr<Backend> subset(const std::vector<int>& ranks, World* member, const std::string& set) override {
    (void)ranks;
    if (!member) return nullptr;
    BackendContext context{*member, store_, generation_, nullptr};
    context.set = set;
    return std::make_unique<GlooBackend>(context);
  }

  void abort() noexcept override {
    if (shm_) shm_->abort();
    if (host_shm_) host_shm_->abort();
    if (mesh_) mesh_->abort();
    if (p2p_) p2p_->abort();
  }

 private:
  void allreduce_on_transport(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) {
    const std::size_t bytes = count * size_of(type);
    if (size_ == 1 || count == 0) return copy(send, recv, bytes);
    if (shm_) {
      shm_->allreduce(send ? send : recv, recv, count, size_of(type), reduce_function(type, op));
    } else if (host_shm_ && bytes >= points_.two_level_min) {
      two_level_allreduce(*host_shm_, *cross_mesh_, points_, send ? send : recv, recv, count, size_of(type),
                          reduce_function(type, op), work_, scratch_);
    } else {
      copy(send, recv, bytes);
      direct_allreduce(*mesh_, recv, count, size_of(type), reduce_function(type, op), scratch_);
    }
    if (op == ReduceOp::Average) divide_in_place(recv, count, type, size_);
  }

  // Ranks on one host share memory (backends/shm) when each of them could
  // map the segment; the job agrees over the mesh, so all ranks take the
  // same transport. On one host every collective uses it; across hosts
  // that all run the same number of ranks, allreduces go two-level from
  // the size the cost model (or TRAINRUN_SWITCH_POINTS) says
  // (backends/gloo/two_level_allreduce.h), allgathers when the ranks are
  // numbered host by host (two_level_allgather.h); the rest takes the TCP
  // mesh.
  void join_shared_memory(const World& world) {
    std::string why;
    std::optional<ShmAttachment> attached =
        attach_host_segment(*store_, scope_, rank_, size_, world.hostname, world.start_timeout, why);
    // [0]: shared memory usable here; [1]: ranks numbered host by host, as
    // two-level allgather needs (every rank must agree, so both go round).
    std::int32_t agreed[2] = {
        attached && (static_cast<int>(attached->ranks.size()) == size_ || !attached->cross_ranks.empty()),
        attached && host_major(*attached)};
    direct_allreduce(*mesh_, agreed, 2, sizeof agreed[0], reduce_function(DataType::Int32, ReduceOp::Min), scratch_);
    const bool usable = agreed[0] != 0;
    host_major_ = agreed[1] != 0;
    if (!attached) {
      if (!why.empty()) {
        std::fprintf(stderr, "trainrun: rank %d: shared memory unavailable (%s); collectives use the TCP mesh\n", rank_,
                     why.c_str());
      }
      return;
    }
    attached->segment.close_descriptor();  // every peer has mapped it by now
    if (!usable) return;
    ShmRounds::Options options;
    options.timeout = timeout_;
    options.spin = shm_spin_budget(static_cast<int>(attached->ranks.size()));
    options.check_peer = [this, ranks = attached->ranks](int peer) { mesh_->check_alive(ranks[peer]); };
    options.warn_interval = world.wait_warning;
    options.warn = [this, host = world.hostname, ranks = attached->ranks](int peer, std::chrono::seconds waited) {
      warn_waiting(host, ranks[peer], waited);
    };
    options.peer_name = [host = world.hostname, ranks = attached->ranks, members = members_](int peer) {
      const int r = ranks[peer];
      return "rank " + std::to_string(members.empty() ? r : members[r]) + " (" + host + ")";
    };
    auto collectives = std::make_unique<ShmCollectives>(std::move(attached->segment), attached->index,
                                                        static_cast<int>(attached->ranks.size()), std::move(options));
    if (static_cast<int>(attached->ranks.size()) == size_) {
      shm_ = std::move(collectives);
    } else {
      const int local = static_cast<int>(attached->ranks.size());
      std::string error;
      const std::optional<SwitchPoints> points = switch_points(size_ / local, local, world.switch_points, error);
      if (!points) {
        throw Error(Error::Code::InvalidArgument, std::string(protocol::kEnvSwitchPoints) + ": " + error);
      }
      points_ = *points;
      host_shm_ = std::move(collectives);
      cross_mesh_ = mesh_->subset(attached->cross_ranks);
    }
  }

  // Whether this host's ranks are L consecutive ones and the ranks at this
  // position on every host are h*L + index (the usual -H h1:L,h2:L order).
  static bool host_major(const ShmAttachment& attached) {
    const int local = static_cast<int>(attached.ranks.size());
    for (int j = 0; j < local; ++j) {
      if (attached.ranks[j] != attached.ranks[0] + j) return false;
    }
    for (std::size_t h = 0; h < attached.cross_ranks.size(); ++h) {
      if (attached.cross_ranks[h] != static_cast<int>(h) * local + attached.index) return false;
    }
    return true;
  }

  // A core call (not the engine's: it reports its own stalls) waits for
  // `peer`: one line naming the call and the peer's host, which the
  // rendezvous knows ("host pid backend", written by every rank at init).
  void warn_waiting(const std::string& host, int peer, std::chrono::seconds waited) {
    const CoreCall* call = current_core_call();
    if (!call) return;
    const int job_peer = members_.empty() ? peer : members_[peer];
    if (peer_hosts_.empty()) peer_hosts_.resize(static_cast<std::size_t>(size_));
    std::string& peer_host = peer_hosts_[peer];
    if (peer_host.empty()) {
      try {
        const std::string entry =
            store_->get(protocol::kScopeJob, std::string(protocol::kKeyRankPrefix) + std::to_string(job_peer),
                        std::chrono::seconds(2));
        const auto record = detail::decode_rank_record(entry);
        peer_host = (record ? record->host : "?") + ", ";
      } catch (const Error&) {
        peer_host = "?, ";
      }
    }
    const std::string address = peer_addresses_[peer].substr(0, peer_addresses_[peer].rfind(' '));
    std::fprintf(stderr, "%s\n",
                 core_wait_message(members_.empty() ? rank_ : members_[rank_], host, *call, job_peer,
                                   peer_host + address, waited)
                     .c_str());
  }

  static void copy(const void* from, void* to, std::size_t bytes) {
    if (from && from != to && bytes) std::memmove(to, from, bytes);
  }

  // Nothing but Error leaves a backend (backends/backend.h): the standard
  // library's exceptions (std::bad_alloc of a buffer, std::length_error)
  // become Error here, at every entry point.
  template <typename Fn>
  static void guarded(Fn&& fn) {
    try {
      fn();
    } catch (const Error&) {
      throw;
    } catch (const std::bad_alloc&) {
      throw Error(Error::Code::Backend, "gloo: out of memory for this collective's buffers");
    } catch (const std::length_error&) {
      throw Error(Error::Code::Backend, "gloo: this collective's buffers would exceed the largest allocation possible");
    } catch (const std::exception& e) {
      throw Error(Error::Code::Backend, std::string("gloo: ") + e.what());
    }
  }

  const int rank_;
  const int size_;
  const std::chrono::milliseconds timeout_;
  std::shared_ptr<rendezvous::Store> store_;
  const int generation_;
  const std::vector<int> members_;            // a process set's job ranks (World::members)
  const std::string scope_;                   // this communicator's keys in the rendezvous store
  std::unique_ptr<SocketMesh> mesh_;          // every collective over TCP
  std::unique_ptr<P2PChannel> p2p_;           // point-to-point, on connections of its own
  std::vector<std::string> peer_addresses_;   // "address port" by rank
  std::vector<std::string> peer_hosts_;       // "host, " by rank, looked up on the first wait warning
  std::unique_ptr<ShmCollectives> shm_;       // every collective, when the job is on one host
  std::unique_ptr<ShmCollectives> host_shm_;  // multi-host: this host's ranks (two-level)
  std::unique_ptr<SocketMesh> cross_mesh_;    // multi-host: this local position on every host
  SwitchPoints points_;                       // multi-host: where allreduce changes algorithm
  bool host_major_ = false;                   // multi-host: ranks numbered host by host (two-level allgather)
  std::vector<char> scratch_;                 // direct allreduce receive segment, reused
  std::vector<char> work_;                    // reduce-scatter input in ring order, reused
  std::vector<char> staging_;                 // two-level reducescatter: the host's sum, reused
};

}  // namespace

std::unique_ptr<Backend> make_gloo_backend(const BackendContext& context) {
  return std::make_unique<GlooBackend>(context);
}

std::string gloo_version() {
  return "trainrun's TCP mesh, shared memory among ranks on one host unless TRAINRUN_SHM=0 (built with Gloo " +
         std::to_string(GLOO_VERSION_MAJOR) + "." + std::to_string(GLOO_VERSION_MINOR) + "." +
         std::to_string(GLOO_VERSION_PATCH) + ", whose transport it no longer uses)";
}

}  // namespace trainrun::detail
