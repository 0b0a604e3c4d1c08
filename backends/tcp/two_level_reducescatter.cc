#include "backends/tcp/two_level_reducescatter.h"

#include <algorithm>
#include <cstring>

#include "backends/blocks.h"
#include "backends/tcp/direct_collectives.h"
#include "backends/tcp/two_level_allreduce.h"

namespace trainrun::detail {
namespace {

// Where host h's blocks lie in send, and which part of each a chunk is.
struct HostBlocks {
  const char* send;
  const std::vector<std::size_t>& counts;  // by job rank
  std::vector<std::size_t> offsets;        // bytes, by job rank
  std::size_t element;
  int local;

  // Host h's sum of elements [first, first + most) of each of its blocks,
  // scattered over this host's ranks: rank i gets block h*L+i's slice.
  void reduce_scatter(ShmCollectives& host, int h, std::size_t first, std::size_t most, char* out,
                      ReduceFn reduce) const {
    std::vector<std::size_t> at(static_cast<std::size_t>(local)), slice(static_cast<std::size_t>(local));
    for (int j = 0; j < local; ++j) {
      const std::size_t block = counts[h * local + j];
      const std::size_t begin = std::min(first, block);
      at[j] = offsets[h * local + j] + begin * element;
      slice[j] = std::min(block, first + most) - begin;
    }
    host.reducescatter(send, at, out, slice, element, reduce);
  }
};

// Elements [k*c, (k+1)*c) of a block of `count`, as a byte range.
std::size_t chunk_end(std::size_t k, std::size_t per_chunk, std::size_t count, std::size_t element) {
  return std::min((k + 1) * per_chunk, count) * element;
}

// Between 2 hosts (see the header): the other host's slice of the block at
// this position streams across while its slice of this rank's block
// arrives in `theirs`; this host's own sum lands in recv and takes theirs
// in, chunk by chunk.
void pipelined(ShmCollectives& host, SocketMesh& cross, std::size_t chunk_bytes, const HostBlocks& blocks, char* recv,
               ReduceFn reduce, std::vector<char>& mine, std::vector<char>& theirs) {
  const int me = cross.rank(), peer = 1 - me, local = host.ranks(), index = host.index();
  const std::size_t element = blocks.element;
  const std::size_t out_count = blocks.counts[peer * local + index], in_count = blocks.counts[me * local + index];
  const std::size_t largest = *std::max_element(blocks.counts.begin(), blocks.counts.end());
  const std::size_t per_chunk = std::max<std::size_t>(1, chunk_bytes / element);
  const std::size_t chunks = std::max<std::size_t>(1, (largest + per_chunk - 1) / per_chunk);
  mine.resize(out_count * element);
  theirs.resize(in_count * element);
  const std::size_t in_bytes = theirs.size();
  std::size_t sent = 0, received = 0;
  auto send_chunk = [&](std::size_t k) {
    blocks.reduce_scatter(host, peer, k * per_chunk, per_chunk,
                          mine.data() + std::min(k * per_chunk, out_count) * element, reduce);
    cross.stream(peer, mine.data(), chunk_end(k, per_chunk, out_count, element), sent, peer, theirs.data(), in_bytes,
                 received, received);
  };
  send_chunk(0);
  for (std::size_t k = 0; k < chunks; ++k) {
    if (k + 1 < chunks) send_chunk(k + 1);
    const std::size_t begin = std::min(k * per_chunk, in_count) * element;
    const std::size_t end = chunk_end(k, per_chunk, in_count, element);
    blocks.reduce_scatter(host, me, k * per_chunk, per_chunk, recv + begin, reduce);
    // Chunk k all sent before the next shared-memory round: the other
    // host's ranks need it to reach theirs (SocketMesh::stream_flushed).
    cross.stream_flushed(peer, mine.data(), chunk_end(k, per_chunk, out_count, element), sent, peer, theirs.data(),
                         in_bytes, end, received);
    const char* other = theirs.data() + begin;
    const std::size_t n = (end - begin) / element;
    // The first host's sum first.
    if (me == 0) reduce(recv + begin, recv + begin, other, n);
    else reduce(recv + begin, other, recv + begin, n);
  }
}

// Among 3 or more hosts (see the header): the ranks at this position
// reduce-scatter round a ring, a chunk of every block at a time, and the
// ring's H-1 steps for every chunk make one stream to the right and one
// from the left (as two_level_allreduce's ring). Step s sends this host's
// running sum of host me-1-s's slice: what arrived in step s-1 plus this
// host's own, reduced as it arrives; the last step's is this rank's result.
// This host's sums of chunk k+1 are made in shared memory while chunk k is
// on the wire.
void pipelined_ring(ShmCollectives& host, SocketMesh& cross, std::size_t chunk_bytes, const HostBlocks& blocks,
                    char* recv, ReduceFn reduce, std::vector<char>& sum, std::vector<char>& streams) {
  const int me = cross.rank(), hosts = cross.size(), local = host.ranks(), index = host.index(), steps = hosts - 1;
  const std::size_t element = blocks.element;
  std::vector<std::size_t> across(static_cast<std::size_t>(hosts));
  for (int h = 0; h < hosts; ++h) across[h] = blocks.counts[h * local + index];
  const std::vector<std::size_t> at = block_offsets(across, element);  // this host's sums, by host
  const std::size_t largest = *std::max_element(blocks.counts.begin(), blocks.counts.end());
  const std::size_t per_chunk = std::max<std::size_t>(1, chunk_bytes / element);
  const std::size_t chunks = std::max<std::size_t>(1, (largest + per_chunk - 1) / per_chunk);
  const auto wrap = [&](int h) { return (h % hosts + hosts) % hosts; };
  // Host h's slice in chunk k: bytes [first, second) of its block at this position.
  const auto slice = [&](std::size_t k, int h) {
    return std::pair{std::min(k * per_chunk, across[h]) * element, chunk_end(k, per_chunk, across[h], element)};
  };
  const auto slice_bytes = [&](std::size_t k, int h) { return slice(k, h).second - slice(k, h).first; };
  // Step s of chunk k starts at out_at[k * steps + s] going right, in_at coming from the left.
  std::vector<std::size_t> out_at(chunks * steps + 1), in_at(chunks * steps + 1);
  for (std::size_t i = 0; i < chunks * steps; ++i) {
    const std::size_t k = i / steps;
    const int s = static_cast<int>(i % steps);
    out_at[i + 1] = out_at[i] + slice_bytes(k, wrap(me - 1 - s));
    in_at[i + 1] = in_at[i] + slice_bytes(k, wrap(me - 2 - s));
  }
  sum.resize(at.back());
  streams.resize(out_at.back() + in_at.back());
  char* const outs = streams.data();
  char* const ins = outs + out_at.back();
  const int right = wrap(me + 1), left = wrap(me - 1);
  std::size_t sent = 0, received = 0, ready = 0;
  const auto send_ready = [&](std::size_t needed) {
    cross.stream(right, outs, ready, sent, left, ins, in_at.back(), needed, received);
  };
  const auto reduce_scatter = [&](std::size_t k) {
    for (int h = 0; h < hosts; ++h) {
      blocks.reduce_scatter(host, h, k * per_chunk, per_chunk, sum.data() + at[h] + slice(k, h).first, reduce);
    }
    const int first = wrap(me - 1);  // step 0 sends this host's own sum
    std::memcpy(outs + out_at[k * steps], sum.data() + at[first] + slice(k, first).first, slice_bytes(k, first));
    if (k == 0) ready = out_at[1];
    send_ready(received);
  };
  reduce_scatter(0);
  for (std::size_t k = 0; k < chunks; ++k) {
    if (k + 1 < chunks) reduce_scatter(k + 1);
    for (int s = 0; s < steps; ++s) {
      const std::size_t i = k * steps + s;
      send_ready(in_at[i + 1]);        // step s's slice has arrived
      const int h = wrap(me - 2 - s);  // this host at the last step
      const std::size_t first = slice(k, h).first;
      char* const to = s + 1 < steps ? outs + out_at[i + 1] : recv + first;
      reduce(to, sum.data() + at[h] + first, ins + in_at[i], slice_bytes(k, h) / element);  // this host's first
      if (s + 1 < steps) ready = std::max(ready, out_at[i + 2]);
    }
    // As the allreduce's ring: this chunk all sent before the next
    // shared-memory round, the next chunk's first step going out during it.
    cross.stream_flushed(right, outs, out_at[(k + 1) * steps], sent, left, ins, in_at.back(), received, received);
    if (k + 1 < chunks) {
      ready = std::max(ready, out_at[(k + 1) * steps + 1]);
      send_ready(received);
    }
  }
}

// Short messages: the host's sum in shared memory, local rank 0 alone
// reduce-scatters it across hosts by host (one flow; this host's blocks
// come back) and shares them in shared memory.
void leader(ShmCollectives& host, SocketMesh& cross, const void* send, void* recv,
            const std::vector<std::size_t>& counts, std::size_t element, ReduceFn reduce, std::vector<char>& sum,
            std::vector<char>& work, std::vector<char>& scratch) {
  const int local = host.ranks(), hosts = cross.size(), me = cross.rank(), index = host.index();
  std::vector<std::size_t> of_host(static_cast<std::size_t>(hosts), 0);
  for (std::size_t r = 0; r < counts.size(); ++r) of_host[r / local] += counts[r];
  std::size_t total = 0;
  for (std::size_t c : of_host) total += c;
  sum.resize(total * element);
  host.allreduce(send, sum.data(), total, element, reduce);
  const std::vector<std::size_t> at = block_offsets(of_host, element);
  // This host's blocks land at their place in sum.
  if (index == 0) direct_reducescatter(cross, sum.data(), sum.data() + at[me], of_host, element, reduce, work, scratch);
  host.broadcast(sum.data() + at[me], of_host[me] * element, 0);
  const std::vector<std::size_t> offsets = block_offsets(counts, element);
  const std::size_t mine = static_cast<std::size_t>(me * local + index);
  if (counts[mine] > 0) std::memcpy(recv, sum.data() + offsets[mine], counts[mine] * element);
}

}  // namespace

void two_level_reducescatter(ShmCollectives& host, SocketMesh& cross, const SwitchPoints& points, const void* send,
                             void* recv, const std::vector<std::size_t>& counts, std::size_t element, ReduceFn reduce,
                             std::vector<char>& sum, std::vector<char>& work, std::vector<char>& scratch) {
  const int local = host.ranks(), hosts = cross.size();
  std::size_t total = 0;
  for (std::size_t c : counts) total += c;
  spin_for_network_round(host, total * element);
  if (total * element < points.reducescatter_split_min) {
    return leader(host, cross, send, recv, counts, element, reduce, sum, work, scratch);
  }
  const HostBlocks blocks{static_cast<const char*>(send), counts, block_offsets(counts, element), element, local};
  if (hosts == 2) {
    return pipelined(host, cross, points.chunk_bytes / local, blocks, static_cast<char*>(recv), reduce, work, scratch);
  }
  pipelined_ring(host, cross, points.chunk_bytes / local, blocks, static_cast<char*>(recv), reduce, sum, work);
}

}  // namespace trainrun::detail
