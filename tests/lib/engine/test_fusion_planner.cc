#include <doctest/doctest.h>

#include "lib/engine/fusion_planner.h"

using namespace trainrun;
using namespace trainrun::detail;

namespace {

Response allreduce(const std::string& name, std::size_t floats, DataType type = DataType::Float32) {
  Response r;
  r.request.name = name;
  r.request.type = type;
  r.request.shape = {static_cast<std::int64_t>(floats)};
  return r;
}

}  // namespace

TEST_CASE("small allreduces with the same parameters share one batch, aligned") {
  const std::vector<Response> responses = {allreduce("a", 3), allreduce("b", 5), allreduce("c", 1)};
  const auto batches = plan_batches(responses, 64u << 20);
  REQUIRE(batches.size() == 1);
  CHECK(batches[0].fused);
  REQUIRE(batches[0].items.size() == 3);
  CHECK(batches[0].items[0].offset == 0);
  CHECK(batches[0].items[1].offset == kFusionAlignment);
  CHECK(batches[0].items[2].offset == 2 * kFusionAlignment);
  CHECK(batches[0].bytes == 2 * kFusionAlignment + 4);
}

TEST_CASE("different dtype, op or scale: different batches") {
  std::vector<Response> responses = {allreduce("a", 3), allreduce("b", 3, DataType::Float64), allreduce("c", 3),
                                     allreduce("d", 3), allreduce("e", 3)};
  responses[3].request.reduce_op = ReduceOp::Max;
  responses[4].request.postscale = 0.5;
  const auto batches = plan_batches(responses, 1 << 20);
  REQUIRE(batches.size() == 4);
  CHECK(batches[0].items.size() == 2);  // a and c
  CHECK(batches[0].items[1].response == 2);
}

TEST_CASE("the threshold caps a batch; 0 turns fusion off") {
  std::vector<Response> responses;
  for (int i = 0; i < 4; ++i) responses.push_back(allreduce("t" + std::to_string(i), 256));  // 1 KiB each
  auto batches = plan_batches(responses, 2048);
  REQUIRE(batches.size() == 2);
  CHECK(batches[0].items.size() == 2);
  CHECK(batches[0].bytes <= 2048);
  batches = plan_batches(responses, 0);
  CHECK(batches.size() == 4);
  for (const auto& b : batches) CHECK_FALSE(b.fused);
}

TEST_CASE("allreduces of CUDA memory fuse among themselves, never with host memory") {
  std::vector<Response> responses = {allreduce("gpu.a", 3), allreduce("host", 3), allreduce("gpu.b", 3),
                                     allreduce("gpu1.c", 3)};
  responses[0].request.device = responses[2].request.device = 0;
  responses[3].request.device = 1;  // another device: another batch
  const auto batches = plan_batches(responses, 64u << 20);
  REQUIRE(batches.size() == 3);
  CHECK(batches[0].fused);
  REQUIRE(batches[0].items.size() == 2);
  CHECK(batches[0].items[0].response == 0);
  CHECK(batches[0].items[1].response == 2);
  CHECK(batches[0].items[1].offset == kFusionAlignment);
  CHECK_FALSE(batches[1].fused);
  CHECK(batches[1].items[0].response == 1);
  CHECK_FALSE(batches[2].fused);
  CHECK(batches[2].items[0].response == 3);
}

TEST_CASE("CUDA tensors up to the device's in-place size fuse; larger ones run alone") {
  std::vector<Response> responses = {allreduce("mid", kInPlaceMinBytes / 4), allreduce("mid2", kInPlaceMinBytes / 4),
                                     allreduce("huge", kDeviceInPlaceMinBytes / 4)};
  for (auto& r : responses) r.request.device = 0;
  const auto batches = plan_batches(responses, 64u << 20);
  REQUIRE(batches.size() == 2);
  CHECK_FALSE(batches[0].fused);
  CHECK(batches[0].items[0].response == 2);
  CHECK(batches[1].fused);
  CHECK(batches[1].items.size() == 2);
}

TEST_CASE("large tensors run in place, alone, and a batch of one is not fused") {
  const std::vector<Response> responses = {allreduce("big", kInPlaceMinBytes / 4), allreduce("small", 10)};
  const auto batches = plan_batches(responses, 64u << 20);
  REQUIRE(batches.size() == 2);
  CHECK_FALSE(batches[0].fused);
  CHECK(batches[0].items[0].bytes == kInPlaceMinBytes);
  CHECK_FALSE(batches[1].fused);  // "small" alone needs no copy either
  CHECK(batches[1].items[0].offset == 0);
}

TEST_CASE("other ops and errors run alone; group members are planned one by one") {
  std::vector<Response> responses = {allreduce("a", 2), allreduce("bad", 2), allreduce("b", 2),
                                     allreduce("#group.x", 0)};
  responses[1].error = "mismatch";
  Response gather = allreduce("g", 2);
  gather.request.op = OpType::Allgather;
  responses.push_back(gather);
  responses[3].request.shape.clear();
  responses[3].request.members = {{"x", {2}}, {"y", {kInPlaceMinBytes / 4}}, {"z", {3}}};
  const auto batches = plan_batches(responses, 1 << 20);
  // bad, y (in place), g alone; a, b, x, z fused.
  REQUIRE(batches.size() == 4);
  CHECK(batches[0].items[0].response == 1);
  CHECK(batches[1].items[0].member == 1);
  CHECK(batches[2].items[0].response == 4);
  REQUIRE(batches[3].items.size() == 4);
  CHECK(batches[3].items[2].response == 3);
  CHECK(batches[3].items[3].member == 2);
  CHECK(batches[3].items[3].bytes == 12);
}
