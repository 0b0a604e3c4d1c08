#include "backends/tcp/direct_alltoall.h"

#include <cstdint>
#include <cstring>
#include <string>

#include "backends/blocks.h"
#include "backends/tcp/direct_collectives.h"
#include "trainrun/error.h"

namespace trainrun::detail {
namespace {

// One pair whose counts disagree, as the receiver saw it; `receiver` is
// kNone where a rank saw none. Reduced to the one with the lowest
// (receiver, sender), so every rank reports the same pair.
struct Disagreement {
  static constexpr std::uint64_t kNone = UINT64_MAX;
  std::uint64_t receiver = kNone;
  std::uint64_t sender = 0;
  std::uint64_t sends = 0;    // bytes
  std::uint64_t expects = 0;  // bytes
};

void first_disagreement(void* out, const void* a, const void* b, std::size_t n) {
  const auto* x = static_cast<const Disagreement*>(a);
  const auto* y = static_cast<const Disagreement*>(b);
  auto* o = static_cast<Disagreement*>(out);
  for (std::size_t i = 0; i < n; ++i) {
    const bool take_x = x[i].receiver < y[i].receiver || (x[i].receiver == y[i].receiver && x[i].sender <= y[i].sender);
    o[i] = take_x ? x[i] : y[i];
  }
}

// Every rank tells the rank it sends to in each step how many bytes that
// will be; any pair that disagrees anywhere fails the call on every rank.
void agree_on_counts(SocketMesh& mesh, const std::vector<std::size_t>& send_offsets,
                     const std::vector<std::size_t>& recv_offsets, std::vector<char>& scratch) {
  const int rank = mesh.rank(), size = mesh.size();
  Disagreement seen;
  const std::uint64_t to_self = send_offsets[rank + 1] - send_offsets[rank];
  const std::uint64_t from_self = recv_offsets[rank + 1] - recv_offsets[rank];
  if (to_self != from_self)
    seen = {static_cast<std::uint64_t>(rank), static_cast<std::uint64_t>(rank), to_self, from_self};
  for (int step = 1; step < size; ++step) {
    const int to = (rank + step) % size, from = (rank - step + size) % size;
    const std::uint64_t sends = send_offsets[to + 1] - send_offsets[to];
    std::uint64_t arriving = 0;
    mesh.exchange(to, &sends, sizeof sends, from, &arriving, sizeof arriving);
    const std::uint64_t expects = recv_offsets[from + 1] - recv_offsets[from];
    if (arriving != expects && seen.receiver == Disagreement::kNone) {
      seen = {static_cast<std::uint64_t>(rank), static_cast<std::uint64_t>(from), arriving, expects};
    }
  }
  direct_allreduce(mesh, &seen, 1, sizeof seen, &first_disagreement, scratch);
  if (seen.receiver == Disagreement::kNone) return;
  throw Error(Error::Code::Mismatch, "the ranks' counts disagree: rank " + std::to_string(seen.sender) + " sends " +
                                         std::to_string(seen.sends) + " bytes to rank " +
                                         std::to_string(seen.receiver) + ", which expects " +
                                         std::to_string(seen.expects) + " bytes from it");
}

}  // namespace

void direct_alltoallv(SocketMesh& mesh, const void* send, const std::vector<std::size_t>& send_counts, void* recv,
                      const std::vector<std::size_t>& recv_counts, std::size_t element, std::vector<char>& scratch) {
  const int rank = mesh.rank(), size = mesh.size();
  const auto send_offsets = block_offsets(send_counts, element);
  const auto recv_offsets = block_offsets(recv_counts, element);
  agree_on_counts(mesh, send_offsets, recv_offsets, scratch);
  const char* out = static_cast<const char*>(send);
  char* in = static_cast<char*>(recv);
  const std::size_t own = send_offsets[rank + 1] - send_offsets[rank];
  if (own) std::memcpy(in + recv_offsets[rank], out + send_offsets[rank], own);
  for (int step = 1; step < size; ++step) {
    const int to = (rank + step) % size, from = (rank - step + size) % size;
    mesh.exchange(to, out + send_offsets[to], send_offsets[to + 1] - send_offsets[to], from, in + recv_offsets[from],
                  recv_offsets[from + 1] - recv_offsets[from]);
  }
}

}  // namespace trainrun::detail
