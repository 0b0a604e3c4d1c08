#include "lib/store_world.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "rendezvous/auth.h"
#include "contract/environment.h"
#include "trainrun/error.h"

namespace trainrun::detail {
namespace {

constexpr const char* kHostPrefix = "host.";
constexpr const char* kSecretKey = "secret";

// Every rank's host name, in rank order; a rank that does not arrive in
// time is named.
std::vector<std::string> exchange_hosts(rendezvous::Store& store, const std::string& scope, const World& w) {
  store.set(scope, kHostPrefix + std::to_string(w.rank), w.hostname);
  std::vector<std::string> hosts;
  for (int r = 0; r < w.size; ++r) {
    try {
      hosts.push_back(store.get(scope, kHostPrefix + std::to_string(r), w.start_timeout));
    } catch (const Error& e) {
      if (e.code() != Error::Code::Timeout) throw;
      throw Error(Error::Code::Timeout, "rank " + std::to_string(r) + " of " + std::to_string(w.size) +
                                            " did not reach torch's store within " +
                                            std::to_string(w.start_timeout.count() / 1000) + " s");
    }
  }
  return hosts;
}

// Local and cross ranks from the hosts, numbered in order of each host's
// first rank (Horovod's meaning: cross rank = which host, among those with
// a rank at this local rank).
void place(World& w, const std::vector<std::string>& hosts) {
  std::vector<std::string> order;
  std::vector<int> slots;
  for (const std::string& host : hosts) {
    const auto it = std::find(order.begin(), order.end(), host);
    if (it == order.end()) {
      order.push_back(host);
      slots.push_back(1);
    } else {
      ++slots[static_cast<std::size_t>(it - order.begin())];
    }
  }
  const int host = static_cast<int>(std::find(order.begin(), order.end(), w.hostname) - order.begin());
  w.local_size = slots[static_cast<std::size_t>(host)];
  w.local_rank = static_cast<int>(std::count(hosts.begin(), hosts.begin() + w.rank, w.hostname));
  std::tie(w.cross_rank, w.cross_size) = cross_rank_and_size(slots, host, w.local_rank);
  if (!w.store_addr.empty() || !w.iface.empty() || !w.network.empty()) return;
  if (order.size() == 1) {
    w.store_addr = "127.0.0.1";
    return;
  }
  throw Error(Error::Code::InvalidArgument, "the ranks are on " + std::to_string(order.size()) +
                                                " hosts and the store's host is unknown (a file:// store?): set " +
                                                contract::kEnvIface + " or " + contract::kEnvNetwork +
                                                " to choose the job's network, or use env:// or tcp://");
}

}  // namespace

World world_from_store(World w, rendezvous::Store& store, const std::string& scope, const StoreWorldRequest& request) {
  if (request.size < 1 || request.rank < 0 || request.rank >= request.size) {
    throw Error(Error::Code::InvalidArgument,
                "torch says rank " + std::to_string(request.rank) + " of " + std::to_string(request.size));
  }
  w.source = World::Source::Store;
  w.rank = request.rank;
  w.size = request.size;
  w.store_addr = request.store_addr;
  if (request.timeout.count() > 0) w.start_timeout = request.timeout;
  if (w.size == 1) return w;
  place(w, exchange_hosts(store, scope, w));
  if (w.rank == 0) {
    w.secret_hex = rendezvous::to_hex(rendezvous::generate_secret());
    store.set(scope, kSecretKey, w.secret_hex);
  } else {
    w.secret_hex = store.get(scope, kSecretKey, w.start_timeout);
  }
  return w;
}

}  // namespace trainrun::detail
