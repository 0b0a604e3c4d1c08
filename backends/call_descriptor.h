// CallDescriptor: what every rank must agree on for one core collective
// (the op, the dtype, the reduce op, the root, the count), packed in two
// 64-bit words so that a transport can carry it beside its own
// synchronisation for almost nothing: the shared-memory round publishes
// it with the round (backends/shm/shm_rounds.h), and the checking mode
// (TRAINRUN_CHECK_CALLS) allgathers it before each core call. A mismatch
// becomes Error(Mismatch) on every rank with the same text, naming the
// first rank that disagrees with the lowest one and how. Value type, pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "trainrun/types.h"

namespace trainrun::detail {

enum class CoreOp : std::uint8_t {
  Allreduce = 1,
  Allgather,
  Allgatherv,
  Broadcast,
  Alltoall,
  Reducescatter,
  Barrier,
  Subset,
  Reduce
};

// Every core op, in enum order, with its name and which of the descriptor's
// arguments it uses: to_string, describe_call and the engine's requests
// (lib/engine/request.h, which carry the CoreOp) all read this one table, so
// a new core op is one enumerator and one row.
struct CoreOpInfo {
  CoreOp op;
  const char* name;  // as users see it: the Communicator call's name
  bool reduces;      // the reduce op counts
  bool rooted;       // the root counts
};
inline constexpr CoreOpInfo kCoreOps[] = {
    {CoreOp::Allreduce, "allreduce", true, false},    {CoreOp::Allgather, "allgather", false, false},
    {CoreOp::Allgatherv, "allgatherv", false, false}, {CoreOp::Broadcast, "broadcast", false, true},
    {CoreOp::Alltoall, "alltoall", false, false},     {CoreOp::Reducescatter, "reducescatter", true, false},
    {CoreOp::Barrier, "barrier", false, false},       {CoreOp::Subset, "subset", false, false},
    {CoreOp::Reduce, "reduce", true, true},
};
inline constexpr CoreOp kLastCoreOp = CoreOp::Reduce;

constexpr bool core_ops_in_enum_order() {
  for (std::size_t i = 0; i < std::size(kCoreOps); ++i) {
    if (static_cast<std::size_t>(kCoreOps[i].op) != i + 1) return false;
  }
  return static_cast<std::size_t>(kLastCoreOp) == std::size(kCoreOps);
}
static_assert(core_ops_in_enum_order(), "kCoreOps lists every CoreOp once, in enum order");

// The row of a valid op; ops from the wire are checked against kLastCoreOp first.
constexpr const CoreOpInfo& info(CoreOp op) { return kCoreOps[static_cast<std::size_t>(op) - 1]; }
// "allreduce"; "?" for a value that is no CoreOp (e.g. CoreOp{}).
const char* to_string(CoreOp op);

struct CallDescriptor {
  std::uint64_t what = 0;   // op | dtype << 8 | reduce op << 16 | root << 32; 0: nothing to check
  std::uint64_t count = 0;  // elements per rank, or a hash of allgatherv's counts

  bool empty() const { return what == 0; }
  bool operator==(const CallDescriptor& o) const { return what == o.what && count == o.count; }
  bool operator!=(const CallDescriptor& o) const { return !(*this == o); }
};

inline std::uint64_t pack_call(CoreOp op, DataType type, ReduceOp reduce, int root) {
  return static_cast<std::uint64_t>(op) | static_cast<std::uint64_t>(type) << 8 |
         static_cast<std::uint64_t>(reduce) << 16 | static_cast<std::uint64_t>(static_cast<std::uint32_t>(root)) << 32;
}

// `root` counts only for the rooted ops and `reduce` only for the reducing ones:
// the others pack 0, so no rank is told it disagrees about an unused argument.
// Inline: every core call makes one.
inline CallDescriptor describe_call(CoreOp op, DataType type, std::size_t count, ReduceOp reduce = ReduceOp::Sum,
                                    int root = 0) {
  if (op == CoreOp::Barrier) return {pack_call(op, DataType::UInt8, ReduceOp::Sum, 0), 0};
  const CoreOpInfo& what = info(op);
  return {pack_call(op, type, what.reduces ? reduce : ReduceOp::Sum, what.rooted ? root : 0), count};
}
// allgatherv: every rank passes every rank's count; they are what must agree.
CallDescriptor describe_call(CoreOp op, DataType type, const std::vector<std::size_t>& counts);

// "rank 1 (h1) called broadcast with root 1, rank 0 (h1) with root 0", or
// "" when every non-empty descriptor (by rank, `n` of them) is the same.
// `name(i)` names descriptor i's rank. Empty descriptors (a rank outside a
// core call, e.g. the engine's thread) are not compared.
std::string call_disagreement(const CallDescriptor* by_rank, int n, const std::function<std::string(int)>& name);

// Throws Error(Mismatch) with call_disagreement's text (and what to do) when
// it is not empty.
void check_calls_agree(const CallDescriptor* by_rank, int n, const std::function<std::string(int)>& name);

}  // namespace trainrun::detail
