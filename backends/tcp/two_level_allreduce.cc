#include "backends/tcp/two_level_allreduce.h"

#include <algorithm>
#include <cstring>

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

// Where one chunk's segments lie in the two streams of the ring among H
// hosts: 2(H-1) steps, reduce-scatter then allgather, as ring_reduce_scatter
// and ring_allgather take them (backends/tcp/direct_collectives.cc). At step
// t this rank sends segment out_segment(t) to the right and receives segment
// in_segment(t) from the left, which the left rank sent as its step t.
struct RingSteps {
  int hosts = 0, host = 0;
  std::vector<std::size_t> offsets;  // byte offsets of the piece's H segments, and its end
  int out_segment(int t) const { return t < hosts - 1 ? wrap(host - t) : wrap(host + 1 - (t - hosts + 1)); }
  int in_segment(int t) const { return wrap(out_segment(t) - 1); }
  std::size_t bytes(int segment) const { return offsets[segment + 1] - offsets[segment]; }
  int wrap(int s) const { return (s % hosts + hosts) % hosts; }
};

// Where step t of chunk k starts in the stream to the right (out_at[k *
// steps + t]) and in the one from the left (in_at); the last entry of
// each is the stream's length.
struct RingStreams {
  std::vector<RingSteps> rings;  // by chunk
  std::vector<std::size_t> out_at, in_at;
};

RingStreams ring_streams(const std::vector<Chunk>& chunks, int hosts, int host, std::size_t element) {
  const int steps = 2 * (hosts - 1);
  RingStreams streams{std::vector<RingSteps>(chunks.size()), std::vector<std::size_t>(chunks.size() * steps + 1),
                      std::vector<std::size_t>(chunks.size() * steps + 1)};
  for (std::size_t k = 0; k < chunks.size(); ++k) {
    const RingSteps& ring =
        streams.rings[k] = {hosts, host, block_offsets(even_blocks(chunks[k].piece_count, hosts), element)};
    for (int t = 0; t < steps; ++t) {
      const std::size_t i = k * steps + t;
      streams.out_at[i + 1] = streams.out_at[i] + ring.bytes(ring.out_segment(t));
      streams.in_at[i + 1] = streams.in_at[i] + ring.bytes(ring.in_segment(t));
    }
  }
  return streams;
}

// The split variant among 3 or more hosts, pipelined: this rank's piece of
// every chunk crosses by a ring among its counterparts, and the ring's steps
// for every chunk, one after another, make one long stream to the right and
// one from the left (SocketMesh::stream). A step is sent as soon as its
// segment is reduced (or, in the allgather, has arrived), so the ring's
// steps follow each other at the wire's pace, and chunk k+1's reduce-scatter
// and chunk k's allgather in shared memory run while the kernel sends.
void pipelined_ring_split(ShmCollectives& host, SocketMesh& cross, std::size_t chunk_bytes, const char* in, char* out,
                          std::size_t count, std::size_t element, ReduceFn reduce, std::vector<char>& mine,
                          std::vector<char>& streams) {
  const std::vector<Chunk> chunks = chunks_of(count, element, chunk_bytes, host.ranks(), host.index());
  const int hosts = cross.size(), steps = 2 * (hosts - 1);
  const RingStreams layout = ring_streams(chunks, hosts, cross.rank(), element);
  const std::vector<RingSteps>& rings = layout.rings;
  const std::vector<std::size_t>&out_at = layout.out_at, &in_at = layout.in_at;
  mine.resize(chunks.back().piece_end(element));
  streams.resize(out_at.back() + in_at.back());
  char* const outs = streams.data();
  char* const ins = outs + out_at.back();
  const int right = (cross.rank() + 1) % hosts, left = (cross.rank() + hosts - 1) % hosts;
  std::size_t sent = 0, received = 0, ready = 0;
  const auto send_ready = [&](std::size_t needed) {
    cross.stream(right, outs, ready, sent, left, ins, in_at.back(), needed, received);
  };
  // Chunk k's reduce-scatter in shared memory, and its first step (this
  // rank's own segment) in place in the stream, ready once the steps
  // before it are (chunk 0: at once).
  const auto reduce_scatter = [&](std::size_t k) {
    const Chunk& c = chunks[k];
    host.reducescatter(in + c.first * element, mine.data() + c.piece_at, c.counts, element, reduce);
    const int segment = rings[k].out_segment(0);
    std::memcpy(outs + out_at[k * steps], mine.data() + c.piece_at + rings[k].offsets[segment],
                rings[k].bytes(segment));
    if (k == 0) ready = out_at[1];
    send_ready(received);
  };
  reduce_scatter(0);
  for (std::size_t k = 0; k < chunks.size(); ++k) {
    const Chunk& c = chunks[k];
    const RingSteps& ring = rings[k];
    if (k + 1 < chunks.size()) reduce_scatter(k + 1);
    char* const result = out + (c.first + c.piece_first) * element;
    for (int t = 0; t < steps; ++t) {
      const std::size_t i = k * steps + t;
      send_ready(in_at[i + 1]);  // step t's segment has arrived
      const int segment = ring.in_segment(t);
      const char* arrived = ins + in_at[i];
      char* const next = t + 1 < steps ? outs + out_at[i + 1] : nullptr;  // what step t+1 sends
      if (t < hosts - 1) {
        // Reduce-scatter: this rank's own value first, as ring_reduce_scatter.
        const char* own = mine.data() + c.piece_at + ring.offsets[segment];
        char* const sum = t + 1 < hosts - 1 ? next : result + ring.offsets[segment];
        reduce(sum, own, arrived, ring.bytes(segment) / element);
        if (sum != next) std::memcpy(next, sum, ring.bytes(segment));  // complete: the allgather's first step
      } else {
        std::memcpy(result + ring.offsets[segment], arrived, ring.bytes(segment));
        if (next) std::memcpy(next, arrived, ring.bytes(segment));
      }
      if (next) ready = std::max(ready, out_at[i + 2]);
    }
    // Every step of this chunk sent before the shared-memory round (the other
    // hosts' ranks may wait for it: SocketMesh::stream_flushed); the next
    // chunk's first step goes out while the round runs.
    const std::size_t chunk_end = out_at[(k + 1) * steps];
    cross.stream_flushed(right, outs, chunk_end, sent, left, ins, in_at.back(), received, received);
    if (k + 1 < chunks.size()) {
      ready = std::max(ready, out_at[(k + 1) * steps + 1]);
      send_ready(received);
    }
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
  const int ranks = host.ranks();
  const std::vector<std::size_t> counts = even_blocks(count, ranks);
  const std::size_t mine = counts[host.index()];
  if (cross.size() == 2 || counts[0] * element >= cross_ring_min(cross.size())) {
    // Every local rank takes the same branch: counts[0] is the largest block.
    const auto split = cross.size() == 2 ? pipelined_split : pipelined_ring_split;
    return split(host, cross, points.chunk_bytes, static_cast<const char*>(send), static_cast<char*>(recv), count,
                 element, reduce, block, scratch);
  }
  // Blocks too short for the ring: recursive doubling among the hosts.
  block.resize(mine * element);
  host.reducescatter(send, block.data(), counts, element, reduce);
  if (mine > 0) cross_allreduce(cross, block.data(), mine, element, reduce, scratch);
  host.allgatherv(block.data(), recv, counts, element);
}

}  // namespace trainrun::detail
