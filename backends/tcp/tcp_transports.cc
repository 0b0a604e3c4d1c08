#include "backends/tcp/tcp_transports.h"

#include <cstdint>
#include <cstdio>
#include <optional>

#include "backends/reduction.h"
#include "backends/shm/shm_group.h"
#include "backends/tcp/direct_collectives.h"
#include "contract/environment.h"
#include "rendezvous/auth.h"
#include "os/interfaces.h"
#include "os/net.h"
#include "rendezvous/store.h"
#include "trainrun/error.h"

namespace trainrun::detail {
namespace {

// This host's address on the job's network: the interface's
// (TRAINRUN_IFACE), the one in TRAINRUN_NETWORK, or the one that routes to
// the rendezvous (to a framework's store). The mesh binds it.
std::string job_network_address(const World& world) {
  if (!world.iface.empty()) return net::interface_address(world.iface);
  if (world.network.empty()) {
    return net::local_address_toward(world.has_rendezvous() ? world.rendezvous_addr : world.store_addr);
  }
  return net::address_in_network(world.network);
}

// Each rank listens and publishes its address once; the links themselves
// are made when first needed. Every address comes in one multi-key GET,
// which also waits for every rank to be listening.
void wire_mesh_and_p2p(TcpTransports& t, const BackendContext& context, const std::string& scope,
                       const rendezvous::Secret& secret) {
  const World& world = context.world;
  t.links = std::make_shared<PeerLinks>(
      PeerLinks::Options{world.rank, world.size, secret, world.members, world.collective_timeout, nullptr},
      job_network_address(world));
  t.p2p = std::make_unique<P2PChannel>(
      P2PChannel::Options{world.rank, world.size, world.members, world.collective_timeout}, t.links);
  context.store->set(scope, "mesh." + std::to_string(world.rank), t.links->published());
  const auto addresses =
      context.store->get_range(scope, "mesh.", 0, static_cast<std::uint64_t>(world.size), world.start_timeout);
  t.links->set_addresses(addresses);
  t.mesh = std::make_unique<SocketMesh>(t.links, world.collective_timeout);
  t.warning = std::make_unique<PeerWaitWarning>(world.rank, world.hostname, world.members, addresses, context.store);
  t.mesh->set_wait_warning(world.wait_warning,
                           [w = t.warning.get()](int peer, std::chrono::seconds waited) { (*w)(peer, waited); });
  // Spinning on a small receive halves a message between hosts (2 x 1
  // ranks: 8 us against 19 us asleep in poll), but only with a CPU to
  // spare for the network stack: 4 ranks spinning on 2 CPUs took 26-31
  // us against 22 us asleep.
  t.mesh->set_spin(shm_spin_budget(world.local_size + 1));
}

// Whether this host's ranks are L consecutive ones and the ranks at this
// position on every host are h*L + index (the usual -H h1:L,h2:L order).
bool host_major(const ShmAttachment& attached) {
  const int local = static_cast<int>(attached.ranks.size());
  for (int j = 0; j < local; ++j) {
    if (attached.ranks[j] != attached.ranks[0] + j) return false;
  }
  for (std::size_t h = 0; h < attached.cross_ranks.size(); ++h) {
    if (attached.cross_ranks[h] != static_cast<int>(h) * local + attached.index) return false;
  }
  return true;
}

std::unique_ptr<ShmCollectives> shm_collectives(TcpTransports& t, ShmAttachment& attached, const World& world) {
  ShmRounds::Options options;
  options.timeout = world.collective_timeout;
  options.spin = shm_spin_budget(static_cast<int>(attached.ranks.size()));
  options.check_peer = [mesh = t.mesh.get(), ranks = attached.ranks](int peer) { mesh->check_alive(ranks[peer]); };
  options.warn_interval = world.wait_warning;
  options.warn = [w = t.warning.get(), ranks = attached.ranks](int peer, std::chrono::seconds waited) {
    (*w)(ranks[peer], waited);
  };
  options.peer_name = [host = world.hostname, ranks = attached.ranks, members = world.members](int peer) {
    const int r = ranks[peer];
    return "rank " + std::to_string(members.empty() ? r : members[r]) + " (" + host + ")";
  };
  return std::make_unique<ShmCollectives>(std::move(attached.segment), attached.index,
                                          static_cast<int>(attached.ranks.size()), std::move(options));
}

// The job's communicator on one host: every rank's heap (buffers the
// allreduce reads in place), when every rank could make and map them all;
// otherwise the collectives copy, as before, after one line that says why
// (--verbose-worthy, but a missing heap costs speed, not correctness).
void share_heaps(ShmCollectives& shm, TcpTransports& t, const BackendContext& context, const std::string& scope) {
  const World& world = context.world;
  std::string why;
  std::unique_ptr<ShmHeaps> heaps =
      ShmHeaps::share(*context.store, scope, shm.index(), shm.ranks(), world.start_timeout, why);
  std::int32_t everywhere = heaps != nullptr;
  std::vector<char> scratch;
  direct_allreduce(*t.mesh, &everywhere, 1, sizeof everywhere, reduce_function(DataType::Int32, ReduceOp::Min),
                   scratch);
  if (!heaps || !everywhere) {
    if (!why.empty()) std::fprintf(stderr, "trainrun: rank %d: no shared heap (%s)\n", world.rank, why.c_str());
    return;
  }
  heaps->close_descriptor();  // every peer has mapped it by now
  shm.set_heaps(std::move(heaps));
}

// On one host every collective uses shared memory; across hosts that all
// run the same number of ranks, allreduces go two-level from the size the
// cost model (or TRAINRUN_SWITCH_POINTS) says (two_level_allreduce.h),
// allgathers when the ranks are numbered host by host
// (two_level_allgather.h); the rest takes the TCP mesh.
void join_shared_memory(TcpTransports& t, const BackendContext& context, const std::string& scope) {
  const World& world = context.world;
  std::string why;
  std::optional<ShmAttachment> attached =
      attach_host_segment(*context.store, scope, world.rank, world.size, world.hostname, world.start_timeout, why);
  // [0]: shared memory usable here; [1]: ranks numbered host by host, as
  // two-level allgather needs (every rank must agree, so both go round).
  std::int32_t agreed[2] = {
      attached && (static_cast<int>(attached->ranks.size()) == world.size || !attached->cross_ranks.empty()),
      attached && host_major(*attached)};
  std::vector<char> scratch;
  direct_allreduce(*t.mesh, agreed, 2, sizeof agreed[0], reduce_function(DataType::Int32, ReduceOp::Min), scratch);
  t.host_major = agreed[1] != 0;
  if (!attached) {
    if (!why.empty()) {
      std::fprintf(stderr, "trainrun: rank %d: shared memory unavailable (%s); collectives use the TCP mesh\n",
                   world.rank, why.c_str());
    }
    return;
  }
  attached->segment.close_descriptor();  // every peer has mapped it by now
  if (agreed[0] == 0) return;
  const int local = static_cast<int>(attached->ranks.size());
  if (local == world.size) {
    t.shm = shm_collectives(t, *attached, world);
    if (context.set.empty()) share_heaps(*t.shm, t, context, scope);
    return;
  }
  std::string error;
  const std::optional<SwitchPoints> points = switch_points(world.size / local, local, world.switch_points, error);
  if (!points) throw Error(Error::Code::InvalidArgument, std::string(contract::kEnvSwitchPoints) + ": " + error);
  t.points = *points;
  t.cross_mesh = t.mesh->subset(attached->cross_ranks);
  t.host_shm = shm_collectives(t, *attached, world);
}

}  // namespace

void TcpTransports::abort() noexcept {
  if (shm) shm->abort();
  if (host_shm) host_shm->abort();
  if (mesh) mesh->abort();
  if (p2p) p2p->abort();
}

TcpTransports connect_tcp_transports(const BackendContext& context, const std::string& scope) {
  TcpTransports t;
  if (context.world.size == 1) return t;  // every collective is a local copy
  const auto secret = rendezvous::secret_from_hex(context.world.secret_hex);
  if (!context.store || !secret) {
    throw Error(Error::Code::InvalidArgument,
                "the tcp backend needs a rendezvous (start the job with trainrun, or set "
                "TRAINRUN_RENDEZVOUS_ADDR/PORT/SECRET)");
  }
  wire_mesh_and_p2p(t, context, scope, *secret);
  if (context.world.shm) join_shared_memory(t, context, scope);
  return t;
}

}  // namespace trainrun::detail
