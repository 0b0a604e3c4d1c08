// The line a core call (not the engine's: it reports its own stalls) prints
// while it waits for one peer longer than TRAINRUN_WAIT_WARNING: the call,
// the peer's job rank, its host (looked up once in the rendezvous, which
// holds "host pid backend" for every rank) and its mesh address.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace trainrun::rendezvous {
class Store;
}

namespace trainrun::detail {

class PeerWaitWarning {
 public:
  // `members`: a process set's job ranks (empty: the job itself);
  // `addresses`: each peer's "address port" on the mesh.
  PeerWaitWarning(int rank, std::string host, std::vector<int> members, std::vector<std::string> addresses,
                  std::shared_ptr<rendezvous::Store> store);

  // Prints the line when a core call is running on this thread; else nothing.
  void operator()(int peer, std::chrono::seconds waited);

 private:
  std::string peer_host(int job_peer, int peer);

  const int rank_;
  const std::string host_;
  const std::vector<int> members_;
  const std::vector<std::string> addresses_;
  const std::shared_ptr<rendezvous::Store> store_;
  std::vector<std::string> peer_hosts_;  // "host, " by rank, looked up on the first warning
};

}  // namespace trainrun::detail
