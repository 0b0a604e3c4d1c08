#include "backends/tcp/two_level_allgather.h"

#include "backends/blocks.h"
#include "backends/tcp/two_level_allreduce.h"

namespace trainrun::detail {

void two_level_allgatherv(ShmCollectives& host, SocketMesh& cross, void* recv, const std::vector<std::size_t>& counts,
                          std::size_t element, bool replicated) {
  const int local = host.ranks(), hosts = cross.size(), me = cross.rank(), index = host.index();
  char* base = static_cast<char*>(recv);
  const std::vector<std::size_t> offsets = block_offsets(counts, element);
  // What crosses for host h: its block at this position, or (replicated) all of its blocks.
  const int first = replicated ? 0 : index, past = replicated ? local : index + 1;
  auto block = [&](int h) { return base + offsets[h * local + first]; };
  auto bytes = [&](int h) { return offsets[h * local + past] - offsets[h * local + first]; };
  // Host h's blocks over shared memory; this rank's (h, index) is in place.
  auto share = [&](int h) {
    const std::vector<std::size_t> of_host(counts.begin() + h * local, counts.begin() + (h + 1) * local);
    host.allgatherv(nullptr, base + offsets[h * local], of_host, element);
  };
  spin_for_network_round(host, offsets.back());
  if (replicated) share(me);
  if (hosts == 2) {
    const int peer = 1 - me;
    std::size_t sent = 0, received = 0;
    cross.stream(peer, block(me), bytes(me), sent, peer, block(peer), bytes(peer), 0, received);
    if (!replicated) share(me);
    // All of this block sent before the next shared-memory round: the other
    // host's ranks wait for it to reach theirs.
    cross.stream_flushed(peer, block(me), bytes(me), sent, peer, block(peer), bytes(peer), bytes(peer), received);
    if (!replicated) share(peer);
    return;
  }
  // A ring among the hosts: in step s, pass on the block of host me-s.
  const int right = (me + 1) % hosts, left = (me + hosts - 1) % hosts;
  for (int step = 0; step < hosts - 1; ++step) {
    const int out = (me - step + hosts) % hosts, in = (me - step - 1 + hosts) % hosts;
    cross.exchange(right, block(out), bytes(out), left, block(in), bytes(in));
  }
  for (int h = 0; h < hosts && !replicated; ++h) share(h);
}

}  // namespace trainrun::detail
