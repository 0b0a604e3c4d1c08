#include "backends/tcp/peer_wait_warning.h"

#include <cstdio>
#include <utility>

#include "backends/core_call.h"
#include "contract/job_records.h"
#include "contract/kv_keys.h"
#include "rendezvous/store.h"
#include "trainrun/error.h"

namespace trainrun::detail {

PeerWaitWarning::PeerWaitWarning(int rank, std::string host, std::vector<int> members,
                                 std::vector<std::string> addresses, std::shared_ptr<rendezvous::Store> store)
    : rank_(rank), host_(std::move(host)), members_(std::move(members)), addresses_(std::move(addresses)),
      store_(std::move(store)), peer_hosts_(addresses_.size()) {}

void PeerWaitWarning::operator()(int peer, std::chrono::seconds waited) {
  const CoreCall* call = current_core_call();
  if (!call) return;
  const int job_peer = members_.empty() ? peer : members_[peer];
  const std::string& address = addresses_[peer];
  std::fprintf(stderr, "%s\n",
               core_wait_message(members_.empty() ? rank_ : members_[rank_], host_, *call, job_peer,
                                 peer_host(job_peer, peer) + address.substr(0, address.rfind(' ')), waited)
                   .c_str());
}

std::string PeerWaitWarning::peer_host(int job_peer, int peer) {
  std::string& known = peer_hosts_[peer];
  if (!known.empty()) return known;
  try {
    const std::string entry = store_->get(
        contract::kScopeJob, std::string(contract::kKeyRankPrefix) + std::to_string(job_peer), std::chrono::seconds(2));
    const auto record = decode_rank_record(entry);
    known = (record ? record->host : "?") + ", ";
  } catch (const Error&) {
    known = "?, ";
  }
  return known;
}

}  // namespace trainrun::detail
