#include <doctest/doctest.h>

#include "lib/engine/request.h"
#include "trainrun/error.h"

using namespace trainrun;
using namespace trainrun::detail;

namespace {

Request sample() {
  Request r;
  r.name = "fc.weight";
  r.op = OpType::Allreduce;
  r.type = DataType::Float16;
  r.reduce_op = ReduceOp::Average;
  r.root = 2;
  r.prescale = 0.5;
  r.postscale = 4;
  r.shape = {17, 23, 57};
  r.age_ms = 1234;
  return r;
}

std::string why(const Request& a, const Request& b) { return disagreement(a, 0, b, 1).value_or("(agree)"); }

}  // namespace

TEST_CASE("requests survive encoding, every field") {
  Request group = sample();
  group.name = "#group.a";
  group.shape.clear();
  group.members = {{"a", {3}}, {"b", {4, 5}}};
  Request core;
  core.op = OpType::Core;
  core.core_op = CoreOp::Allgatherv;
  core.name = "#core.7";
  const auto decoded = decode_requests(encode_requests({sample(), group, core}), 1);
  REQUIRE(decoded.size() == 3);
  CHECK_FALSE(disagreement(decoded[0], 0, sample(), 1));
  CHECK(decoded[0].age_ms == 1234);
  CHECK(decoded[1].members == group.members);
  CHECK(decoded[2].core_op == CoreOp::Allgatherv);
  CHECK(decode_requests(encode_requests({}), 0).empty());
}

TEST_CASE("malformed negotiation bytes are an Internal error naming the sender") {
  const std::string good = encode_requests({sample()});
  auto fails = [](const std::string& bytes, const std::string& what) {
    try {
      decode_requests(bytes, 3);
      FAIL("decoded: " << what);
    } catch (const Error& e) {
      CHECK(e.code() == Error::Code::Internal);
      const std::string message = e.what();
      CHECK_MESSAGE(message.find("rank 3 sent a malformed negotiation message") != std::string::npos, message);
      CHECK_MESSAGE(message.find(what) != std::string::npos, message);
    }
  };
  fails(good.substr(0, good.size() - 1), "truncated");
  fails(good + "x", "trailing bytes");
  std::string bad_op = good;
  bad_op[4 + 4 + 9] = 42;  // count, name length, name, then the op byte
  fails(bad_op, "enum value 42");
  std::string bad_core_op = good;
  bad_core_op[good.size() - 4 - 1] = static_cast<char>(static_cast<int>(kLastCoreOp) + 1);  // before age_ms
  fails(bad_core_op, "enum value " + std::to_string(static_cast<int>(kLastCoreOp) + 1));
  Request negative = sample();
  negative.shape = {-1};
  fails(encode_requests({negative}), "negative dimension");
  Request deep = sample();
  deep.shape.assign(65, 1);
  fails(encode_requests({deep}), "65 dimensions");
}

TEST_CASE("disagreements name the tensor, both ranks and both values") {
  Request a = sample(), b = sample();
  CHECK(why(a, b) == "(agree)");
  b.age_ms = 0;  // age is not part of the agreement
  CHECK(why(a, b) == "(agree)");
  b.shape = {17, 1311};
  CHECK(why(a, b) == "allreduce 'fc.weight': rank 1 shape [17,1311] != rank 0 shape [17,23,57]");
  b = sample();
  b.type = DataType::Float32;
  CHECK(why(a, b) == "allreduce 'fc.weight': rank 1 dtype float32 != rank 0 dtype float16");
  b = sample();
  b.op = OpType::Broadcast;
  CHECK(why(a, b) == "allreduce 'fc.weight': rank 1 op broadcast != rank 0 op allreduce");
  b = sample();
  b.reduce_op = ReduceOp::Min;
  CHECK(why(a, b) == "allreduce 'fc.weight': rank 1 reduce op min != rank 0 reduce op average");
  b = sample();
  b.root = 0;
  CHECK(why(a, b) == "allreduce 'fc.weight': rank 1 root 0 != rank 0 root 2");
  b = sample();
  b.device = 1;
  CHECK(why(a, b) == "allreduce 'fc.weight': rank 1 memory CUDA != rank 0 memory host");
  a.device = 0;  // one GPU per rank: device numbers may differ
  CHECK(why(a, b) == "(agree)");
  a.device = -1;
  b = sample();
  b.prescale = 0.25;
  CHECK(why(a, b) == "allreduce 'fc.weight': rank 1 prescale 0.25 != rank 0 prescale 0.5");
  b = sample();
  b.postscale = 1;
  CHECK(why(a, b) == "allreduce 'fc.weight': rank 1 postscale 1 != rank 0 postscale 4");
  a.members = {{"x", {1}}};
  b = a;
  b.members.push_back({"y", {2}});
  CHECK(why(a, b) == "allreduce 'fc.weight': rank 1 group member 1 'y' != rank 0 group member 1 nothing");
  b.members = {{"x", {2}}};
  CHECK(why(a, b) == "allreduce 'fc.weight': rank 1 shape of 'x' [2] != rank 0 shape of 'x' [1]");
}

TEST_CASE("allgather and alltoall may differ in the first dimension only") {
  Request a = sample(), b = sample();
  a.op = b.op = OpType::Allgather;
  b.shape = {1, 23, 57};
  CHECK(why(a, b) == "(agree)");
  b.shape = {17, 23, 58};
  CHECK(why(a, b) ==
        "allgather 'fc.weight': rank 1 shape after the first dimension [23,58] != rank 0 "
        "shape after the first dimension [23,57]");
  b.shape = {17, 23};
  CHECK(why(a, b).find("shape after the first dimension [23] !=") != std::string::npos);
  a.op = b.op = OpType::Alltoall;
  b.shape = {5, 23, 57};
  CHECK(why(a, b) == "(agree)");
}

TEST_CASE("core calls compare the call and its count") {
  Request a, b;
  a.op = b.op = OpType::Core;
  a.name = b.name = "#core.3";
  a.core_op = CoreOp::Allreduce;
  b.core_op = CoreOp::Broadcast;
  CHECK(why(a, b) == "core allreduce '#core.3': rank 1 op core broadcast != rank 0 op core allreduce");
  b.core_op = CoreOp::Allreduce;
  a.shape = {2};
  b.shape = {3};
  CHECK(why(a, b) == "core allreduce '#core.3': rank 1 shape [3] != rank 0 shape [2]");
}

TEST_CASE("counts and shapes") {
  Request r = sample();
  CHECK(r.count() == 17 * 23 * 57);
  CHECK(r.bytes() == 17 * 23 * 57 * 2);
  r.shape = {};
  CHECK(r.count() == 1);  // a scalar
  r.members = {{"a", {2, 3}}, {"b", {}}};
  CHECK(r.count() == 7);
  CHECK(shape_text({}) == "[]");
  CHECK(shape_text({4}) == "[4]");
}
