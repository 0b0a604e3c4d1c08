// The transports of one tcp communicator, met through the rendezvous:
// the links to its peers (made at first use, peer_links.h) that carry the
// TCP mesh of every rank and point-to-point messages on links of their own,
// and, where ranks share a host and could each map the segment, shared
// memory: for every collective when the job is on one host, or host by
// host under a mesh of each host's ranks at one position (two-level). The
// ranks agree over the mesh, so all of them take the same transport.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/shm/shm_collectives.h"
#include "backends/tcp/p2p_channel.h"
#include "backends/tcp/peer_links.h"
#include "backends/tcp/peer_wait_warning.h"
#include "backends/tcp/socket_mesh.h"
#include "contract/switch_points.h"

namespace trainrun::detail {

struct TcpTransports {
  std::shared_ptr<PeerLinks> links;          // first: outlives what uses its descriptors
  std::unique_ptr<SocketMesh> mesh;          // every collective over TCP
  std::unique_ptr<P2PChannel> p2p;           // point-to-point, on links of its own
  std::unique_ptr<PeerWaitWarning> warning;  // the line a core call prints while it waits
  std::unique_ptr<ShmCollectives> shm;       // every collective, when the job is on one host
  std::unique_ptr<ShmCollectives> host_shm;  // multi-host: this host's ranks (two-level)
  std::unique_ptr<SocketMesh> cross_mesh;    // multi-host: this local position on every host
  SwitchPoints points;                       // multi-host: where allreduce changes algorithm
  bool host_major = false;                   // multi-host: ranks numbered host by host (two-level allgather)

  void abort() noexcept;
};

// Collective over the communicator's ranks; `scope` holds its keys in the
// rendezvous store. Throws Error(InvalidArgument) without a rendezvous.
TcpTransports connect_tcp_transports(const BackendContext& context, const std::string& scope);

}  // namespace trainrun::detail
