// The engine under real ranks: names submitted in different orders on
// different ranks, thousands of tiny tensors, every dtype in one cycle,
// grouped allreduces, every kind of mismatch (an Error of code Mismatch on
// every rank, within 2 s), duplicate names, join with uneven batches, core
// calls mixed with engine traffic, and engine results equal to the core
// API's for every op. Run on every rank by a launcher:
//   trainrun --local -np 3 ./engine_multirank
// Collective code uses CHECK, never REQUIRE: a rank that left a test case
// early would leave the others waiting.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <trainrun/trainrun.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "tests/conformance/every_rank_main.h"
#include "tests/conformance/typed_buffer.h"

using trainrun::DataType;
using trainrun::Error;
using trainrun::ReduceOp;
using trainrun::Tensor;
using trainrun::test::TypedBuffer;

namespace {

trainrun::Communicator* g_comm = nullptr;
trainrun::Communicator& comm() { return *g_comm; }
int rank() { return comm().rank(); }
int size() { return comm().size(); }

// Small integers: exact in every dtype and in any order of addition, so
// results can be compared bit for bit whatever algorithm reduced them.
double value(int r, std::size_t i, ReduceOp op = ReduceOp::Sum) {
  if (op == ReduceOp::Product) return 1.0 + static_cast<double>((i + r) % 2);
  return static_cast<double>((i * 7 + r * 3) % 5);
}

double reduced(std::size_t i, ReduceOp op, DataType type, const std::vector<int>& ranks) {
  if (type == DataType::Bool) {  // "and" of the values set (nonzero) for Min and Product, else "or"
    const bool all = op == ReduceOp::Min || op == ReduceOp::Product;
    bool acc = all;
    for (int r : ranks) acc = all ? acc && value(r, i, op) != 0 : acc || value(r, i, op) != 0;
    return acc;
  }
  double acc = value(ranks[0], i, op);
  for (std::size_t k = 1; k < ranks.size(); ++k) {
    const double v = value(ranks[k], i, op);
    if (op == ReduceOp::Product) acc *= v;
    else if (op == ReduceOp::Min) acc = std::min(acc, v);
    else if (op == ReduceOp::Max) acc = std::max(acc, v);
    else acc += v;
  }
  if (op != ReduceOp::Average) return acc;
  return trainrun::is_floating(type) ? trainrun::test::round_to(type, acc / size()) : std::trunc(acc / size());
}

std::vector<int> all_ranks() {
  std::vector<int> r(static_cast<std::size_t>(size()));
  std::iota(r.begin(), r.end(), 0);
  return r;
}

TypedBuffer filled(DataType type, std::size_t count, int r, ReduceOp op = ReduceOp::Sum) {
  TypedBuffer b(type, count);
  for (std::size_t i = 0; i < count; ++i) b.set(i, value(r, i, op));
  return b;
}

Tensor view(TypedBuffer& b, std::vector<std::int64_t> shape) { return {b.data(), DataType::Float32, shape}; }
Tensor view(TypedBuffer& b, DataType type, std::vector<std::int64_t> shape) { return {b.data(), type, shape}; }

double tolerance(DataType type, ReduceOp op) {
  if (op != ReduceOp::Average || !trainrun::is_floating(type)) return 0.0;
  return type == DataType::BFloat16 ? 8e-3 : type == DataType::Float16 ? 1e-3 : 1e-6;
}

std::string where(const std::string& what) {
  return what + " np=" + std::to_string(size()) + " rank=" + std::to_string(rank());
}

// Runs `submit` (which must fail with a Mismatch) and checks the message
// names the tensor and every fragment in `expect`, within 2 s.
template <typename Submit>
void expect_mismatch(const char* kind, Submit&& submit, const std::vector<std::string>& expect) {
  const auto start = std::chrono::steady_clock::now();
  try {
    trainrun::synchronize(submit());
    CHECK_MESSAGE(false, where(kind) << ": no error");
  } catch (const Error& e) {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string message = e.what();
    CHECK_MESSAGE(e.code() == Error::Code::Mismatch, where(kind) << ": " << message);
    CHECK_MESSAGE(seconds < 2.0, where(kind) << ": took " << seconds << " s");
    CHECK_MESSAGE(message.find("rank " + std::to_string(rank()) + " (") == 0, message);
    for (const auto& fragment : expect) {
      CHECK_MESSAGE(message.find(fragment) != std::string::npos, where(kind)
                                                                     << ": '" << fragment << "' not in: " << message);
    }
  }
}

}  // namespace

TEST_CASE("the same names submitted in a different order on every rank") {
  const std::size_t tensors = 60;
  std::vector<TypedBuffer> data;
  std::vector<std::size_t> counts;
  for (std::size_t t = 0; t < tensors; ++t) counts.push_back(1 + (t * 7919) % (t % 10 == 0 ? 300000 : 3000));
  std::vector<std::size_t> order(tensors);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 shuffle(static_cast<unsigned>(rank() * 7 + 1));
  for (int step = 0; step < 3; ++step) {  // later steps hit the response cache
    data.clear();
    for (std::size_t t = 0; t < tensors; ++t) data.push_back(filled(DataType::Float32, counts[t], rank() + step));
    std::shuffle(order.begin(), order.end(), shuffle);
    std::vector<trainrun::Handle> handles(tensors);
    for (std::size_t t : order) {
      handles[t] =
          trainrun::allreduce_async("grad." + std::to_string(t), view(data[t], {static_cast<std::int64_t>(counts[t])}));
    }
    for (std::size_t t = 0; t < tensors; ++t) {
      trainrun::synchronize(handles[t]);
      std::vector<int> shifted = all_ranks();
      for (int& r : shifted) r += step;
      const auto bad = data[t].first_mismatch(
          [&](std::size_t i) { return reduced(i, ReduceOp::Sum, DataType::Float32, shifted); }, 0);
      CHECK_MESSAGE(!bad, where("tensor " + std::to_string(t) + " step " + std::to_string(step)) << ": " << *bad);
    }
  }
}

TEST_CASE("thousands of tiny tensors") {
  const std::size_t tensors = 3000;
  std::vector<std::int32_t> data(tensors * 2);
  for (int step = 0; step < 2; ++step) {
    std::vector<trainrun::Handle> handles;
    for (std::size_t t = 0; t < tensors; ++t) {
      const std::size_t k = rank() % 2 ? tensors - 1 - t : t;  // odd ranks submit backwards
      data[2 * k] = static_cast<std::int32_t>(k + rank());
      data[2 * k + 1] = rank() + step;
      handles.push_back(
          trainrun::allreduce_async("tiny." + std::to_string(k), {&data[2 * k], DataType::Int32, {2}}, ReduceOp::Sum));
    }
    for (auto h : handles) trainrun::synchronize(h);
    const int n = size(), rank_sum = n * (n - 1) / 2;
    std::size_t wrong = 0;
    for (std::size_t k = 0; k < tensors; ++k) {
      wrong += data[2 * k] != static_cast<std::int32_t>(n * k + rank_sum) || data[2 * k + 1] != rank_sum + n * step;
    }
    CHECK_MESSAGE(wrong == 0, where("tiny tensors") << ": " << wrong << " wrong");
  }
}

TEST_CASE("every dtype and reduce op in one cycle") {
  std::vector<TypedBuffer> data;
  std::vector<std::pair<DataType, ReduceOp>> cases;
  std::vector<trainrun::Handle> handles;
  for (DataType type : trainrun::kAllDataTypes) {
    for (ReduceOp op : trainrun::kAllReduceOps) {
      cases.emplace_back(type, op);
      data.push_back(filled(type, 257, rank(), op));
    }
  }
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const std::size_t k = rank() % 2 ? cases.size() - 1 - c : c;
    handles.push_back(trainrun::allreduce_async(
        std::string("mixed.") + trainrun::to_string(cases[k].first) + "." + trainrun::to_string(cases[k].second),
        view(data[k], cases[k].first, {257}), cases[k].second));
  }
  for (auto h : handles) trainrun::synchronize(h);
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const auto [type, op] = cases[c];
    const auto bad =
        data[c].first_mismatch([&](std::size_t i) { return reduced(i, op, type, all_ranks()); }, tolerance(type, op));
    CHECK_MESSAGE(!bad, where(std::string(trainrun::to_string(type)) + " " + trainrun::to_string(op)) << ": " << *bad);
  }
}

TEST_CASE("engine results equal the core API's for every op") {
  const int n = size(), r = rank();
  for (DataType type : trainrun::kAllDataTypes) {
    for (ReduceOp op : trainrun::kAllReduceOps) {
      for (std::size_t count : {std::size_t{1}, std::size_t{1001}, std::size_t{300000}}) {
        TypedBuffer engine = filled(type, count, r, op), core = filled(type, count, r, op);
        trainrun::synchronize(
            trainrun::allreduce_async("eq.allreduce", view(engine, type, {static_cast<std::int64_t>(count)}), op));
        comm().allreduce(core.data(), core.data(), count, type, op);
        CHECK_MESSAGE(std::memcmp(engine.data(), core.data(), count * trainrun::size_of(type)) == 0,
                      where(std::string("allreduce ") + trainrun::to_string(type) + " " + trainrun::to_string(op)));
      }
    }
    // allgather: rank r has r+1 rows of 3.
    TypedBuffer mine = filled(type, 3 * (r + 1), r);
    const auto out = trainrun::synchronize(trainrun::allgather_async("eq.allgather", view(mine, type, {r + 1, 3})));
    std::vector<std::size_t> counts;
    for (int k = 0; k < n; ++k) counts.push_back(3 * (k + 1));
    TypedBuffer core(type, std::accumulate(counts.begin(), counts.end(), std::size_t{0}));
    comm().allgatherv(mine.data(), counts[r], core.data(), counts, type);
    CHECK(out.shape == std::vector<std::int64_t>{n * (n + 1) / 2, 3});
    CHECK(out.data.size() == core.count() * trainrun::size_of(type));
    CHECK_MESSAGE(std::memcmp(out.data.data(), core.data(), out.data.size()) == 0, where("allgather"));
    for (int root = 0; root < n; ++root) {
      TypedBuffer engine = filled(type, 77, r), core_b = filled(type, 77, r);
      trainrun::synchronize(trainrun::broadcast_async("eq.broadcast", view(engine, type, {7, 11}), root));
      comm().broadcast(core_b.data(), 77, type, root);
      CHECK_MESSAGE(std::memcmp(engine.data(), core_b.data(), 77 * trainrun::size_of(type)) == 0, where("broadcast"));
    }
    // alltoall, even splits: 2 rows of 5 to every rank.
    TypedBuffer send = filled(type, 10 * n, r), core_out(type, 10 * n);
    const auto a2a = trainrun::synchronize(trainrun::alltoall_async("eq.alltoall", view(send, type, {2 * n, 5})));
    comm().alltoall(send.data(), core_out.data(), 10, type);
    CHECK(a2a.shape == std::vector<std::int64_t>{2 * n, 5});
    CHECK(a2a.received_splits == std::vector<std::int64_t>(n, 2));
    CHECK_MESSAGE(std::memcmp(a2a.data.data(), core_out.data(), a2a.data.size()) == 0, where("alltoall"));
    // reducescatter: 3 rows of 4 per rank.
    TypedBuffer full = filled(type, 12 * n, r), core_rs(type, 12);
    const auto rs =
        trainrun::synchronize(trainrun::reducescatter_async("eq.reducescatter", view(full, type, {3 * n, 4})));
    comm().reducescatter(full.data(), core_rs.data(), 12, type, ReduceOp::Sum);
    CHECK(rs.shape == std::vector<std::int64_t>{3, 4});
    CHECK_MESSAGE(rs.data.size() == 12 * trainrun::size_of(type), where("reducescatter"));
    CHECK_MESSAGE(std::memcmp(rs.data.data(), core_rs.data(), rs.data.size()) == 0, where("reducescatter"));
  }
}

TEST_CASE("uneven alltoall and reducescatter, scales, groups") {
  const int n = size(), r = rank();
  // Rank r sends k+1 rows of 2 to rank k, each row holding (r, k).
  std::vector<std::int64_t> splits;
  std::vector<std::int32_t> send;
  for (int k = 0; k < n; ++k) {
    splits.push_back(k + 1);
    for (int row = 0; row <= k; ++row) send.insert(send.end(), {r, k});
  }
  const auto a2a = trainrun::synchronize(trainrun::alltoall_async(
      "uneven.alltoall", {send.data(), DataType::Int32, {static_cast<std::int64_t>(send.size() / 2), 2}}, splits));
  CHECK(a2a.received_splits == std::vector<std::int64_t>(n, r + 1));
  CHECK(a2a.shape == std::vector<std::int64_t>{n * (r + 1), 2});
  const auto* got = reinterpret_cast<const std::int32_t*>(a2a.data.data());
  for (int k = 0; k < n * (r + 1); ++k) {
    CHECK_MESSAGE((got[2 * k] == k / (r + 1) && got[2 * k + 1] == r), where("alltoall row " + std::to_string(k)));
  }
  // 2n+1 rows: rank 0 gets 3, the others 2.
  std::vector<double> rows(static_cast<std::size_t>(2 * n + 1), r + 1.0);
  const auto rs = trainrun::synchronize(
      trainrun::reducescatter_async("uneven.reducescatter", {rows.data(), DataType::Float64, {2 * n + 1}}));
  CHECK(rs.shape == std::vector<std::int64_t>{r == 0 ? 3 : 2});
  CHECK(reinterpret_cast<const double*>(rs.data.data())[0] == n * (n + 1) / 2.0);

  std::vector<float> x(10, static_cast<float>(r + 1));
  trainrun::synchronize(
      trainrun::allreduce_async("scaled", {x.data(), DataType::Float32, {10}}, ReduceOp::Sum, 2.0, 0.25));
  CHECK(x[9] == doctest::Approx(0.5 * n * (n + 1) / 2.0));

  // A group of a tiny, a medium and a large tensor: the large one is
  // reduced in place, before the fused batch of the other two.
  std::vector<std::vector<float>> g = {std::vector<float>(3, r + 1.0f), std::vector<float>(5000, 2.0f * r),
                                       std::vector<float>(300000, 3.0f * r)};
  std::vector<Tensor> tensors;
  for (auto& t : g) tensors.push_back({t.data(), DataType::Float32, {static_cast<std::int64_t>(t.size())}});
  trainrun::synchronize(trainrun::grouped_allreduce_async({"g.a", "g.b", "g.c"}, tensors));
  const float ranks = n * (n - 1) / 2.0f;
  CHECK(g[0][2] == ranks + n);
  CHECK(g[1][4999] == 2 * ranks);
  CHECK(g[2][299999] == 3 * ranks);
}

// Rows that do not divide evenly, each rank's share several pipeline
// chunks long (tests/integration/test_ssh.cc runs it across hosts, where
// reducescatter goes two-level): rank 0 gets one row more than the others.
TEST_CASE("uneven reducescatter of long rows") {
  const int n = size(), r = rank();
  constexpr std::int64_t kColumns = 1000;
  const std::int64_t rows = 200 * n + 1;
  std::vector<float> full(static_cast<std::size_t>(rows * kColumns));
  for (std::size_t i = 0; i < full.size(); ++i) full[i] = static_cast<float>(i % 1000 * (r + 1));
  const auto rs = trainrun::synchronize(
      trainrun::reducescatter_async("long.reducescatter", {full.data(), DataType::Float32, {rows, kColumns}}));
  const std::int64_t mine = r == 0 ? 201 : 200, first = r == 0 ? 0 : 200 * r + 1;
  REQUIRE(rs.shape == std::vector<std::int64_t>{mine, kColumns});
  const auto* got = reinterpret_cast<const float*>(rs.data.data());
  std::size_t bad = 0;
  for (std::size_t i = 0; i < static_cast<std::size_t>(mine * kColumns); ++i) {
    bad += got[i] != static_cast<float>((first * kColumns + i) % 1000 * (n * (n + 1) / 2));
  }
  CHECK_MESSAGE(bad == 0, bad << " of " << mine * kColumns << " elements wrong on rank " << r);
}

TEST_CASE("every mismatch raises on every rank within 2 s") {
  if (size() < 2) return;  // needs a rank that disagrees
  const int last = size() - 1;
  const bool odd = rank() == last;  // the rank that disagrees
  std::vector<float> f(64, 1.0f);
  std::vector<double> d(64, 1.0);
  auto t = [&](std::vector<std::int64_t> shape) { return Tensor{f.data(), DataType::Float32, shape}; };
  const std::string rl = "rank " + std::to_string(last);
  expect_mismatch("shape",
                  [&] {
                    return trainrun::allreduce_async(
                        "fc.weight", t(odd ? std::vector<std::int64_t>{4, 16} : std::vector<std::int64_t>{2, 4, 8}));
                  },
                  {"allreduce 'fc.weight': " + rl + " shape [4,16] != rank 0 shape [2,4,8]"});
  expect_mismatch(
      "dtype",
      [&] {
        return trainrun::allreduce_async("m.dtype", odd ? Tensor{d.data(), DataType::Float64, {8}} : t({8}));
      },
      {"'m.dtype'", rl + " dtype float64 != rank 0 dtype float32"});
  expect_mismatch(
      "op", [&] { return odd ? trainrun::allgather_async("m.op", t({8})) : trainrun::allreduce_async("m.op", t({8})); },
      {"'m.op'", rl + " op allgather != rank 0 op allreduce"});
  expect_mismatch("reduce op",
                  [&] { return trainrun::allreduce_async("m.reduce", t({8}), odd ? ReduceOp::Max : ReduceOp::Sum); },
                  {rl + " reduce op max != rank 0 reduce op sum"});
  expect_mismatch(
      "allgather dims",
      [&] {
        return trainrun::allgather_async("m.gather", t({rank() + 1, odd ? 4 : 2}));
      },
      {"'m.gather'", rl + " shape after the first dimension [4] != rank 0 shape after the first dimension [2]"});
  expect_mismatch("root", [&] { return trainrun::broadcast_async("m.root", t({8}), odd ? 0 : last); },
                  {"broadcast 'm.root'", rl + " root 0 != rank 0 root " + std::to_string(last)});
  expect_mismatch("prescale",
                  [&] { return trainrun::allreduce_async("m.pre", t({8}), ReduceOp::Sum, odd ? 0.5 : 1.0); },
                  {rl + " prescale 0.5 != rank 0 prescale 1"});
  expect_mismatch("postscale",
                  [&] { return trainrun::allreduce_async("m.post", t({8}), ReduceOp::Sum, 1.0, odd ? 3.0 : 2.0); },
                  {rl + " postscale 3 != rank 0 postscale 2"});
  expect_mismatch(
      "group members",
      [&] {
        std::vector<std::string> names = {"m.g1", odd ? "m.g3" : "m.g2"};
        return trainrun::grouped_allreduce_async(names, {t({4}), Tensor{f.data() + 8, DataType::Float32, {4}}});
      },
      {rl + " group member 1 'm.g3' != rank 0 group member 1 'm.g2'"});
  expect_mismatch("group member shape",
                  [&] {
                    return trainrun::grouped_allreduce_async(
                        {"m.h1", "m.h2"}, {t({4}), Tensor{f.data() + 8, DataType::Float32, {odd ? 5 : 4}}});
                  },
                  {rl + " shape of 'm.h2' [5] != rank 0 shape of 'm.h2' [4]"});
  // A core call whose count differs: the engine negotiates core calls too.
  try {
    comm().allreduce(f.data(), f.data(), odd ? 3 : 2, DataType::Float32, ReduceOp::Sum);
    CHECK_MESSAGE(false, where("core count") << ": no error");
  } catch (const Error& e) {
    CHECK_MESSAGE(e.code() == Error::Code::Mismatch, e.what());
    CHECK_MESSAGE(std::string(e.what()).find(rl + " shape [3] != rank 0 shape [2]") != std::string::npos, e.what());
  }
  // The names are free again and everything still works.
  std::vector<float> ok(8, 1.0f);
  trainrun::synchronize(trainrun::allreduce_async("fc.weight", {ok.data(), DataType::Float32, {8}}));
  CHECK(ok[0] == static_cast<float>(size()));
}

TEST_CASE("a name still in flight cannot be submitted again") {
  // "dup" completes once every rank submitted it, so only a rank that is
  // surely not the last can test it in flight: rank 0 tests, and the others
  // submit "dup" only after the "gate" op, which rank 0 joins after its tests.
  if (size() == 1) return;  // rank 0 would be the last
  std::vector<float> a(4, 1.0f), b(4, 1.0f), gate(1, 1.0f);
  auto pass_gate = [&] {
    trainrun::synchronize(trainrun::allreduce_async("gate", {gate.data(), DataType::Float32, {1}}));
  };
  if (rank() != 0) pass_gate();
  const auto h = trainrun::allreduce_async("dup", {a.data(), DataType::Float32, {4}});
  if (rank() == 0) {
    try {
      trainrun::allreduce_async("dup", {b.data(), DataType::Float32, {4}});
      CHECK_MESSAGE(false, "no error for a duplicate");
    } catch (const Error& e) {
      CHECK(e.code() == Error::Code::InvalidArgument);
      CHECK_MESSAGE(std::string(e.what()).find("'dup' is already in flight on this rank") != std::string::npos,
                    e.what());
    }
    CHECK_THROWS_AS(trainrun::grouped_allreduce_async({"other", "dup"}, {Tensor{b.data(), DataType::Float32, {2}},
                                                                         Tensor{b.data() + 2, DataType::Float32, {2}}}),
                    Error);
    pass_gate();
  }
  trainrun::synchronize(h);
  CHECK(a[0] == static_cast<float>(size()));
  CHECK_THROWS_AS(trainrun::synchronize(h), Error);  // the handle is gone
}

TEST_CASE("bad arguments fail at once, on the calling rank only") {
  float x = 0;
  auto code = [](auto&& submit) {
    try {
      submit();
    } catch (const Error& e) {
      return e.code();
    }
    return Error::Code::Internal;
  };
  CHECK(code([&] { trainrun::allreduce_async("", {&x, DataType::Float32, {1}}); }) == Error::Code::InvalidArgument);
  CHECK(code([&] { trainrun::allreduce_async("#x", {&x, DataType::Float32, {1}}); }) == Error::Code::InvalidArgument);
  CHECK(code([&] { trainrun::allreduce_async("neg", {&x, DataType::Float32, {-1}}); }) == Error::Code::InvalidArgument);
  CHECK(code([&] {
          trainrun::allreduce_async("null", {nullptr, DataType::Float32, {3}});
        }) == Error::Code::InvalidArgument);
  // CUDA memory (device 0) goes to allreduce and broadcast only, unscaled.
  CHECK(code([&] { trainrun::allgather_async("gpu", {&x, DataType::Float32, {1}, 0}); }) == Error::Code::Unsupported);
  CHECK(code([&] {
          trainrun::allreduce_async("gpu", {&x, DataType::Float32, {1}, 0}, ReduceOp::Sum, 2.0);
        }) == Error::Code::Unsupported);
  CHECK(code([&] {
          trainrun::allreduce_async("bscale", {&x, DataType::Bool, {1}}, ReduceOp::Sum, 2.0);
        }) == Error::Code::InvalidArgument);
  CHECK(code([&] {
          trainrun::broadcast_async("root", {&x, DataType::Float32, {1}}, size());
        }) == Error::Code::InvalidArgument);
  CHECK(code([&] {
          trainrun::alltoall_async("splits", {&x, DataType::Float32, {1}}, {2});
        }) == Error::Code::InvalidArgument);
  CHECK(code([&] {
          trainrun::allgather_async("scalar", {&x, DataType::Float32, {}});
        }) == Error::Code::InvalidArgument);
  CHECK(code([&] { trainrun::synchronize(trainrun::Handle{987654321}); }) == Error::Code::InvalidArgument);
}

TEST_CASE("join with uneven batches") {
  const int n = size(), r = rank();
  const int batches = 2 * (r + 1);  // rank r runs out of data after 2(r+1) batches
  // Cached before anyone joins: a joined rank must still refuse these.
  float y = 0;
  std::vector<float> rows_out(static_cast<std::size_t>(n), 1.0f);
  trainrun::synchronize(trainrun::broadcast_async("join.bcast", {&y, DataType::Float32, {1}}, 0));
  trainrun::synchronize(trainrun::alltoall_async("join.a2a", {rows_out.data(), DataType::Float32, {n}}));
  for (int b = 0; b < batches; ++b) {
    std::vector<double> grad(1000, r + 1.0);
    trainrun::synchronize(trainrun::allreduce_async("join.grad", {grad.data(), DataType::Float64, {1000}}));
    // Ranks that already joined contribute zeros.
    double expected = 0;
    for (int k = 0; k < n; ++k) expected += (2 * (k + 1) > b) ? k + 1.0 : 0.0;
    CHECK_MESSAGE(grad[999] == expected, where("batch " + std::to_string(b)));
    if (b == batches - 1 && r == n - 1 && n > 1) {
      // Only this rank is left: min, max and product see the others' identity.
      std::int32_t v = 5;
      trainrun::synchronize(trainrun::allreduce_async("join.min", {&v, DataType::Int32, {1}}, ReduceOp::Min));
      CHECK(v == 5);
      float p = 3;
      trainrun::synchronize(trainrun::allreduce_async("join.prod", {&p, DataType::Float32, {1}}, ReduceOp::Product));
      CHECK(p == 3.0f);
      std::int64_t rows[2] = {7, 7};
      try {  // as in Horovod: only allreduces go on while a rank has joined
        trainrun::synchronize(trainrun::allgather_async("join.gather", {rows, DataType::Int64, {1, 2}}));
        CHECK_MESSAGE(false, "allgather with joined ranks did not fail");
      } catch (const Error& e) {
        CHECK_MESSAGE(std::string(e.what()).find("allgather 'join.gather': rank 0 has joined") != std::string::npos,
                      e.what());
      }
      try {
        trainrun::synchronize(trainrun::broadcast_async("join.bcast", {&y, DataType::Float32, {1}}, 0));
        CHECK_MESSAGE(false, "broadcast from a joined root did not fail");
      } catch (const Error& e) {
        CHECK_MESSAGE(std::string(e.what()).find("rank 0 (the root) has joined") != std::string::npos, e.what());
      }
      try {
        trainrun::synchronize(trainrun::alltoall_async("join.a2a", {rows_out.data(), DataType::Float32, {n}}));
        CHECK_MESSAGE(false, "alltoall with joined ranks did not fail");
      } catch (const Error& e) {
        CHECK_MESSAGE(std::string(e.what()).find("alltoall 'join.a2a': rank 0 has joined") != std::string::npos,
                      e.what());
      }
    }
  }
  CHECK(trainrun::join() == n - 1);
  // Everyone is back: a normal allreduce and a core call work.
  std::vector<float> after(4, 1.0f);
  trainrun::synchronize(trainrun::allreduce_async("join.after", {after.data(), DataType::Float32, {4}}));
  CHECK(after[0] == static_cast<float>(n));
  comm().barrier();
}

TEST_CASE("core calls and engine ops interleave safely") {
  std::vector<float> big(200000);
  for (int i = 0; i < 20; ++i) {
    std::fill(big.begin(), big.end(), 1.0f);
    const auto h = trainrun::allreduce_async("mix.big", {big.data(), DataType::Float32, {200000}});
    std::int64_t v = i, out = 0;
    comm().allreduce(&v, &out, 1, DataType::Int64, ReduceOp::Sum);
    CHECK(out == i * size());
    trainrun::synchronize(h);
    CHECK(big[199999] == static_cast<float>(size()));
    trainrun::barrier();
  }
}

int main(int argc, char** argv) { return trainrun::test::run_on_every_rank(argc, argv, "engine_multirank", g_comm); }
