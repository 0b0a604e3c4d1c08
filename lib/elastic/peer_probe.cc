#include "lib/elastic/peer_probe.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <set>

#include "backends/core_call.h"
#include "os/net.h"
#include "trainrun/error.h"

namespace trainrun::detail {
namespace ep = elastic_protocol;

PeerProbe::PeerProbe(const World& world, ep::Assignment joined) : worker_(world.worker_id), joined_(std::move(joined)) {
  if (const ep::Slot* mine = joined_.find(worker_)) host_ = mine->host;
  address_ = world.has_rendezvous() ? net::local_address_toward(world.rendezvous_addr) : "";
  if (!address_.empty()) listen_fd_ = net::listen_tcp(address_, &port_, true);
  moved_at_ = std::chrono::steady_clock::now();
  finished_ = collective_progress().finished;
}

std::chrono::milliseconds PeerProbe::stuck_for(std::chrono::steady_clock::time_point now) {
  const CollectiveProgress p = collective_progress();
  if (!held_ && (p.waiting == 0 || p.finished != finished_)) {
    finished_ = p.finished;
    moved_at_ = now;
  }
  return std::chrono::duration_cast<std::chrono::milliseconds>(now - moved_at_);
}

PeerProbe::~PeerProbe() = default;

void PeerProbe::publish(rendezvous::Store& store) {
  store.set(ep::kScope, ep::probe_key(worker_), address_ + " " + std::to_string(port_));
  published_ = true;
}

void PeerProbe::tick(rendezvous::Store& store) {
  if (!listen_fd_) return;
  if (!published_) publish(store);
  // Probes only connect: each connection is accepted and closed at once.
  while (UniqueFd(::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC))) {
  }
  const auto now = std::chrono::steady_clock::now();
  if (stuck_for(now) < kProbeAfter || now < next_probe_) return;
  probe(store);
  next_probe_ = std::chrono::steady_clock::now() + kProbeAfter;
}

// One worker per other host stands for its host.
void PeerProbe::probe(rendezvous::Store& store) {
  std::set<std::string> tried;
  std::string unreachable;
  for (const ep::Slot& slot : joined_.slots) {
    if (slot.host == host_ || !tried.insert(slot.host).second) continue;
    std::string target;
    try {
      target = store.get(ep::kScope, ep::probe_key(slot.worker), std::chrono::milliseconds(200));
    } catch (const Error&) {
      continue;  // it has not published one: nothing to say about its host
    }
    const auto space = target.find(' ');
    if (space == std::string::npos) continue;
    int error = 0;
    if (!net::connect_tcp(target.substr(0, space), target.substr(space + 1),
                          std::chrono::steady_clock::now() + kConnectTimeout, &error)) {
      unreachable += " " + std::to_string(slot.worker);
    }
  }
  // Stuck as of the answer: the probes' own time counts.
  const auto stuck = stuck_for(std::chrono::steady_clock::now());
  store.set(ep::kScope, ep::reach_key(worker_), std::to_string(stuck.count()) + unreachable);
}

}  // namespace trainrun::detail
