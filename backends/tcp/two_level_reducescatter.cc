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
  const int local = host.ranks(), hosts = cross.size(), index = host.index();
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
  // Every host's blocks at this position, summed over this host, in host
  // order: the cross mesh's reduce-scatter input.
  std::vector<std::size_t> across(static_cast<std::size_t>(hosts));
  for (int h = 0; h < hosts; ++h) across[h] = counts[h * local + index];
  const std::vector<std::size_t> at = block_offsets(across, element);
  sum.resize(at.back());
  for (int h = 0; h < hosts; ++h) {
    const std::size_t largest = *std::max_element(counts.begin() + h * local, counts.begin() + (h + 1) * local);
    blocks.reduce_scatter(host, h, 0, largest, sum.data() + at[h], reduce);
  }
  direct_reducescatter(cross, sum.data(), recv, across, element, reduce, work, scratch);
}

}  // namespace trainrun::detail
