#include "backends/tcp/two_level_allreduce.h"

#include <algorithm>

#include "backends/blocks.h"
#include "backends/tcp/direct_collectives.h"

namespace trainrun::detail {
namespace {

// Chunk k of the vector, and this rank's piece of it after the reduce-scatter.
struct Chunk {
  std::size_t first = 0;            // element offset of the chunk in the vector
  std::vector<std::size_t> counts;  // the chunk's split among the local ranks
  std::size_t piece_first = 0;      // element offset of this rank's piece in the chunk
  std::size_t piece_count = 0;      // elements in this rank's piece
  std::size_t piece_at = 0;         // byte offset of this rank's piece in the stream
  std::size_t piece_end(std::size_t element) const { return piece_at + piece_count * element; }
};

std::vector<Chunk> chunks_of(std::size_t count, std::size_t element, std::size_t chunk_bytes, int ranks, int index) {
  const std::size_t per_chunk = std::max<std::size_t>(1, chunk_bytes / element);
  std::vector<Chunk> chunks;
  std::size_t at = 0;
  for (std::size_t first = 0; first < count; first += per_chunk) {
    Chunk c;
    c.first = first;
    c.counts = even_blocks(std::min(per_chunk, count - first), ranks);
    for (int r = 0; r < index; ++r) c.piece_first += c.counts[r];
    c.piece_count = c.counts[index];
    c.piece_at = at;
    at = c.piece_end(element);
    chunks.push_back(std::move(c));
  }
  return chunks;
}

// The split variant between 2 hosts, pipelined (see the header). `mine`
// streams to the other host's rank at this position while its pieces
// arrive in `theirs`; a piece is reduced straight into recv (the one
// being sent is never overwritten), then allgathered in place.
void pipelined_split(ShmCollectives& host, SocketMesh& cross, std::size_t chunk_bytes, const char* in, char* out,
                     std::size_t count, std::size_t element, ReduceFn reduce, std::vector<char>& mine,
                     std::vector<char>& theirs) {
  const std::vector<Chunk> chunks = chunks_of(count, element, chunk_bytes, host.ranks(), host.index());
  const std::size_t total = chunks.back().piece_end(element);
  mine.resize(total);
  theirs.resize(total);
  const int peer = 1 - cross.rank();
  const bool first_host = cross.rank() == 0;
  std::size_t sent = 0, received = 0, ready = 0;
  auto reduce_scatter = [&](const Chunk& c) {
    host.reducescatter(in + c.first * element, mine.data() + c.piece_at, c.counts, element, reduce);
    ready = c.piece_end(element);
    cross.stream(peer, mine.data(), ready, sent, peer, theirs.data(), total, received, received);
  };
  reduce_scatter(chunks[0]);
  for (std::size_t k = 0; k < chunks.size(); ++k) {
    const Chunk& c = chunks[k];
    if (k + 1 < chunks.size()) reduce_scatter(chunks[k + 1]);
    cross.stream(peer, mine.data(), ready, sent, peer, theirs.data(), total, c.piece_end(element), received);
    // This piece all sent before the shared-memory round: the other host's
    // ranks need it to reach theirs (see SocketMesh::stream_flushed).
    cross.stream_flushed(peer, mine.data(), c.piece_end(element), sent, peer, theirs.data(), total,
                         c.piece_end(element), received);
    char* result = out + (c.first + c.piece_first) * element;
    const char* a = mine.data() + c.piece_at;
    const char* b = theirs.data() + c.piece_at;
    // The first host's value first, on both hosts: the same bits everywhere.
    if (first_host) reduce(result, a, b, c.piece_count);
    else reduce(result, b, a, c.piece_count);
    host.allgatherv(nullptr, out + c.first * element, c.counts, element);
  }
}

// Among the hosts: a ring from where contract/switch_points.h says.
void cross_allreduce(SocketMesh& cross, void* data, std::size_t count, std::size_t element, ReduceFn reduce,
                     std::vector<char>& scratch) {
  direct_allreduce(cross, data, count, element, reduce, scratch, cross_ring_min(cross.size()));
}

}  // namespace

void spin_for_network_round(ShmCollectives& host, std::size_t bytes) {
  constexpr std::size_t kShortBytes = 32 * 1024;
  host.set_spin(bytes < kShortBytes ? std::chrono::nanoseconds(std::chrono::milliseconds(1))
                                    : std::chrono::nanoseconds(0));
}

void two_level_allreduce(ShmCollectives& host, SocketMesh& cross, const SwitchPoints& points, const void* send,
                         void* recv, std::size_t count, std::size_t element, ReduceFn reduce, std::vector<char>& block,
                         std::vector<char>& scratch) {
  const std::size_t bytes = count * element;
  spin_for_network_round(host, bytes);
  if (bytes < points.split_min) {
    host.allreduce(send, recv, count, element, reduce);
    if (bytes < points.leader_min) return cross_allreduce(cross, recv, count, element, reduce, scratch);
    // Leader: local rank 0 alone carries the host sum across; the others
    // take the result from it (the link carries it once, not L times).
    if (host.index() == 0) cross_allreduce(cross, recv, count, element, reduce, scratch);
    host.broadcast(recv, bytes, 0);
    return;
  }
  if (cross.size() == 2) {
    return pipelined_split(host, cross, points.chunk_bytes, static_cast<const char*>(send), static_cast<char*>(recv),
                           count, element, reduce, block, scratch);
  }
  const int ranks = host.ranks();
  const std::vector<std::size_t> counts = even_blocks(count, ranks);
  const std::size_t mine = counts[host.index()];
  block.resize(mine * element);
  host.reducescatter(send, block.data(), counts, element, reduce);
  if (mine > 0) cross_allreduce(cross, block.data(), mine, element, reduce, scratch);
  host.allgatherv(block.data(), recv, counts, element);
}

}  // namespace trainrun::detail
