#include "backends/gloo/two_level_allreduce.h"

#include "backends/blocks.h"
#include "backends/gloo/direct_collectives.h"

namespace trainrun::detail {

void two_level_allreduce(ShmCollectives& host, SocketMesh& cross, const void* send, void* recv, std::size_t count,
                         std::size_t element, ReduceFn reduce, std::vector<char>& block, std::vector<char>& scratch) {
  const int ranks = host.ranks();
  const std::vector<std::size_t> counts = even_blocks(count, ranks);
  const std::size_t mine = counts[host.index()];
  block.resize(mine * element);
  host.reducescatter(send, block.data(), counts, element, reduce);
  if (mine > 0) direct_allreduce(cross, block.data(), mine, element, reduce, scratch);
  host.allgatherv(block.data(), recv, counts, element);
}

}  // namespace trainrun::detail
