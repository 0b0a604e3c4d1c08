// Request: what a rank tells the others about one named operation it has
// submitted, and the rules by which the ranks' requests must agree. The
// negotiation sends lists of requests between ranks, so they encode to
// bytes and decode with every field checked. Plain values; pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/call_descriptor.h"
#include "trainrun/types.h"

namespace trainrun::detail {

enum class OpType : std::uint8_t { Allreduce, Allgather, Broadcast, Alltoall, Reducescatter, Barrier, Join, Core };
const char* to_string(OpType op);

// Prefix of names the engine makes up itself ("#join", "#barrier.N",
// "#core.N", "#group.FIRST").
inline constexpr char kReservedPrefix = '#';

// One tensor of a grouped allreduce.
struct Member {
  std::string name;
  std::vector<std::int64_t> shape;
  bool operator==(const Member& other) const { return name == other.name && shape == other.shape; }
};

struct Request {
  std::string name;
  OpType op = OpType::Allreduce;
  DataType type = DataType::Float32;
  ReduceOp reduce_op = ReduceOp::Sum;
  int root = 0;     // broadcast
  int device = -1;  // trainrun::kCpu, or the rank's CUDA device
  double prescale = 1.0;
  double postscale = 1.0;
  std::vector<std::int64_t> shape;  // empty for a group: see members
  // A grouped allreduce is one request, so that it is negotiated, checked
  // and run as a unit.
  std::vector<Member> members;
  CoreOp core_op{};  // Core: which Communicator call (the one table: backends/call_descriptor.h)
  bool on_cuda() const { return device >= 0; }
  // How long the request had waited on its rank when it was reported: lets
  // the stall inspector date requests that first waited on a cache hit.
  // Not part of what ranks must agree on.
  std::uint32_t age_ms = 0;

  std::size_t count() const;  // elements (of every member, for a group)
  std::size_t bytes() const { return count() * size_of(type); }
  // The first dimension may differ between ranks for these.
  bool first_dim_varies() const { return op == OpType::Allgather || op == OpType::Alltoall; }
};

// "allreduce", or "core broadcast" for a Communicator call.
std::string op_label(const Request& r);
// "[17,23,57]"; "[]" for a scalar.
std::string shape_text(const std::vector<std::int64_t>& shape);

// Whether two ranks' requests for the same name agree (ignoring age and,
// where it may vary, the first dimension). On disagreement: the message
// users see, e.g. "allreduce 'fc.weight': rank 1 shape [17,1311] != rank 0
// shape [17,23,57]". `a` is rank a_rank's request, `b` rank b_rank's.
std::optional<std::string> disagreement(const Request& a, int a_rank, const Request& b, int b_rank);

// Lists of requests on the wire: little-endian, length-prefixed.
std::string encode_requests(const std::vector<Request>& requests);
// Throws Error(Internal) naming `from_rank` when the bytes are malformed.
std::vector<Request> decode_requests(std::string_view bytes, int from_rank);

}  // namespace trainrun::detail
