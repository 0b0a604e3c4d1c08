// The core path's argument checks as pure functions: byte sizes that
// overflow or pass 2^47 (lib/call_size.h), and what ranks must agree on
// for one call (backends/call_descriptor.h).
#include <doctest/doctest.h>

#include <limits>
#include <string>
#include <vector>

#include "backends/call_descriptor.h"
#include "lib/call_size.h"
#include "trainrun/error.h"

using namespace trainrun;
using namespace trainrun::detail;

namespace {

constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();

// The InvalidArgument text `fn` throws, or "" when it throws nothing.
template <typename Fn>
std::string refusal(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    CHECK(e.code() == Error::Code::InvalidArgument);
    return e.what();
  }
  return "";
}

std::string rank(int r) { return "rank " + std::to_string(r); }

}  // namespace

TEST_CASE("byte sizes up to 2^47 pass; overflowing or larger ones name the count") {
  CHECK(checked_bytes(0, DataType::Float32) == 0);
  CHECK(checked_bytes(1000, DataType::Float64, 4) == 32000);
  CHECK(checked_bytes(kMaxCallBytes, DataType::UInt8) == kMaxCallBytes);
  CHECK(checked_bytes(kMaxCallBytes / 8, DataType::Int64) == kMaxCallBytes);
  CHECK(refusal([] { checked_bytes(kMaxCallBytes + 1, DataType::UInt8); }) ==
        "count 140737488355329 of uint8 is more than the 128 TiB (2^47 bytes) one collective can address");
  CHECK(refusal([] { checked_bytes(kMax, DataType::Float32); }) ==
        "count 18446744073709551615 of float32 is more than the 128 TiB (2^47 bytes) one collective can address "
        "(a negative count converted to size_t?)");
  // Each rank's block fits, the whole buffer does not; the product wraps to 0.
  CHECK(refusal([] {
          checked_bytes(std::size_t{1} << 62, DataType::UInt8, 4);
        }).rfind("count 4611686018427387904 of uint8, times 4 ranks, is more than", 0) == 0);
  CHECK(refusal([] { checked_bytes(kMaxCallBytes / 2 + 1, DataType::UInt8, 2); }) != "");
}

TEST_CASE("allgatherv's counts are summed without overflow") {
  CHECK(checked_bytes(std::vector<std::size_t>{1, 2, 3}, DataType::Int32) == 24);
  CHECK(checked_bytes(std::vector<std::size_t>{}, DataType::Int32) == 0);
  const std::size_t half = kMaxCallBytes / 2;
  CHECK(checked_bytes(std::vector<std::size_t>{half, half}, DataType::UInt8) == kMaxCallBytes);
  CHECK(refusal([&] {
          checked_bytes(std::vector<std::size_t>{half, half, 1}, DataType::UInt8);
        }) ==
        "counts[2] = 1 of uint8 brings the total to more than the 128 TiB (2^47 bytes) one collective can address");
  // Two counts whose sum wraps around to a small number.
  CHECK(refusal([] {
          checked_bytes(std::vector<std::size_t>{kMax, 2}, DataType::UInt8);
        }).rfind("counts[0] = ", 0) == 0);
}

TEST_CASE("a tensor's shape product is checked dimension by dimension") {
  CHECK(checked_elements({}, DataType::Float32, "'s'") == 1);
  CHECK(checked_elements({3, 0, std::int64_t{1} << 62}, DataType::Float32, "'z'") == 0);
  CHECK(checked_elements({1 << 20, 1 << 20}, DataType::Float32, "'w'") == std::size_t{1} << 40);
  CHECK(
      refusal([] {
        checked_elements({std::int64_t{1} << 62}, DataType::Float32, "'t' has shape [4611686018427387904]");
      }) ==
      "'t' has shape [4611686018427387904] of float32: more than the 128 TiB (2^47 bytes) one collective can address");
  // 2^32 * 2^32 wraps to 0 in 64 bits.
  CHECK(refusal([] {
          checked_elements({std::int64_t{1} << 32, std::int64_t{1} << 32}, DataType::UInt8, "'u'");
        }) != "");
}

TEST_CASE("descriptors that agree say nothing; the first rank that differs is named with how") {
  const CallDescriptor a = describe_call(CoreOp::Allreduce, DataType::Float32, 4, ReduceOp::Sum);
  std::vector<CallDescriptor> same = {a, a, a};
  CHECK(call_disagreement(same.data(), 3, rank) == "");
  CHECK_FALSE(a.empty());
  CHECK(CallDescriptor{}.empty());

  auto differ = [&](CallDescriptor other) {
    std::vector<CallDescriptor> all = {a, a, other};
    return call_disagreement(all.data(), 3, rank);
  };
  CHECK(differ(describe_call(CoreOp::Allreduce, DataType::Int32, 4)) ==
        "rank 2 called allreduce with dtype int32, rank 0 with dtype float32");
  CHECK(differ(describe_call(CoreOp::Allreduce, DataType::Float32, 4, ReduceOp::Max)) ==
        "rank 2 called allreduce with reduce op max, rank 0 with reduce op sum");
  CHECK(differ(describe_call(CoreOp::Allreduce, DataType::Float32, 5)) ==
        "rank 2 called allreduce with count 5, rank 0 with count 4");
  CHECK(differ(describe_call(CoreOp::Broadcast, DataType::Float32, 4, ReduceOp::Sum, 1)) ==
        "rank 2 called broadcast, rank 0 called allreduce");
  CHECK(differ(describe_call(CoreOp::Barrier, DataType::Float32, 4)) ==
        "rank 2 called barrier, rank 0 called allreduce");
}

TEST_CASE("only the arguments an op uses count; allgatherv compares every rank's counts") {
  CHECK(describe_call(CoreOp::Broadcast, DataType::Int8, 3, ReduceOp::Max, 1) ==
        describe_call(CoreOp::Broadcast, DataType::Int8, 3, ReduceOp::Sum, 1));
  CHECK(describe_call(CoreOp::Allreduce, DataType::Int8, 3, ReduceOp::Sum, 1) ==
        describe_call(CoreOp::Allreduce, DataType::Int8, 3, ReduceOp::Sum, 0));
  std::vector<CallDescriptor> roots = {describe_call(CoreOp::Broadcast, DataType::Int8, 3, ReduceOp::Sum, 0),
                                       describe_call(CoreOp::Broadcast, DataType::Int8, 3, ReduceOp::Sum, 1)};
  CHECK(call_disagreement(roots.data(), 2, rank) == "rank 1 called broadcast with root 1, rank 0 with root 0");

  const std::vector<std::size_t> c1 = {1, 2}, c2 = {1, 3}, c3 = {2, 1};
  std::vector<CallDescriptor> v = {describe_call(CoreOp::Allgatherv, DataType::Int32, c1),
                                   describe_call(CoreOp::Allgatherv, DataType::Int32, c1)};
  CHECK(call_disagreement(v.data(), 2, rank) == "");
  v[1] = describe_call(CoreOp::Allgatherv, DataType::Int32, c2);
  CHECK(call_disagreement(v.data(), 2, rank) == "rank 1 called allgatherv with other counts than rank 0");
  v[1] = describe_call(CoreOp::Allgatherv, DataType::Int32, c3);  // the same total, another split
  CHECK(call_disagreement(v.data(), 2, rank) != "");
}

TEST_CASE("ranks outside a core call are not compared; a mismatch throws Mismatch") {
  const CallDescriptor a = describe_call(CoreOp::Alltoall, DataType::Float64, 8);
  std::vector<CallDescriptor> all = {CallDescriptor{}, a, CallDescriptor{}, a};
  CHECK(call_disagreement(all.data(), 4, rank) == "");
  CHECK_NOTHROW(check_calls_agree(all.data(), 4, rank));
  all[3] = describe_call(CoreOp::Alltoall, DataType::Float64, 9);
  CHECK(call_disagreement(all.data(), 4, rank) == "rank 3 called alltoall with count 9, rank 1 with count 8");
  try {
    check_calls_agree(all.data(), 4, rank);
    FAIL("no mismatch thrown");
  } catch (const Error& e) {
    CHECK(e.code() == Error::Code::Mismatch);
    CHECK(std::string(e.what()).rfind("mismatched collective calls: rank 3 called alltoall with count 9", 0) == 0);
  }
}
