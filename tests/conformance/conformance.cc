// Backend conformance: every collective of the core API, for every dtype,
// reduce op and root, in place and out of place, with counts 0, 1, odd and
// 1Mi, checked element by element against values computed here. Run on
// every rank by any launcher:
//   trainrun --local -np 4 ./conformance
//   mpirun -np 4 ./conformance
// conformance_cuda is this program with CUDA buffers (cuda_device_memory.cc):
//   trainrun --local -np 1 --backend nccl ./conformance_cuda
//   trainrun --local -np 2 --backend tcp ./conformance_cuda   (staged)
// Collective tests use CHECK only (never REQUIRE): a rank that skipped the
// rest of a test case would leave its peers waiting.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <trainrun/trainrun.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "tests/conformance/every_rank_main.h"
#include "tests/conformance/typed_buffer.h"

using trainrun::DataType;
using trainrun::ReduceOp;
using trainrun::test::TypedBuffer;

namespace {

trainrun::Communicator* g_comm = nullptr;
trainrun::Communicator& comm() { return *g_comm; }

const std::size_t kCounts[] = {0, 1, 1001, 1u << 20};

// Bool reduces logically: Sum, Average and Max are "or", Min and Product
// "and". Rank r's element i is bit r % 8 of i, so that every mix of 0s and
// 1s across up to 8 ranks occurs: none set, one, several (a sum would
// give 2), all.
bool is_or(ReduceOp op) { return op != ReduceOp::Min && op != ReduceOp::Product; }
double bool_contribution(int rank, std::size_t i) { return static_cast<double>((i >> (rank % 8)) & 1); }

// Small integers whose sums and products are exact in every dtype, even int8
// and float16 with 16 ranks: only ranks 0-5 contribute factors of 2, so a
// product is at most 8 however many ranks there are.
double contribution(ReduceOp op, DataType type, int rank, std::size_t i) {
  if (type == DataType::Bool) return bool_contribution(rank, i);
  switch (op) {
    case ReduceOp::Product: return 1.0 + static_cast<double>(rank < 6 && (i + rank) % 2 == 1);
    case ReduceOp::Min:
    case ReduceOp::Max: {
      const double v = static_cast<double>((i * 13 + rank * 29) % 11);
      return type == DataType::UInt8 ? v : v - 5.0;
    }
    default: return static_cast<double>((i * 7 + rank * 3) % 5);
  }
}

double reduced(ReduceOp op, DataType type, int size, std::size_t i) {
  if (type == DataType::Bool) {
    bool acc = !is_or(op);
    for (int r = 0; r < size; ++r) {
      const bool v = contribution(op, type, r, i) != 0;
      acc = is_or(op) ? acc || v : acc && v;
    }
    return acc;
  }
  double acc = contribution(op, type, 0, i);
  for (int r = 1; r < size; ++r) {
    const double v = contribution(op, type, r, i);
    switch (op) {
      case ReduceOp::Product: acc *= v; break;
      case ReduceOp::Min: acc = std::min(acc, v); break;
      case ReduceOp::Max: acc = std::max(acc, v); break;
      default: acc += v;
    }
  }
  if (op == ReduceOp::Average) {
    return trainrun::is_floating(type) ? trainrun::test::round_to(type, acc / size) : std::trunc(acc / size);
  }
  return acc;
}

// The values the collectives that only move data carry: 0 and 1 alternate
// for Bool, so that a misplaced block shows.
double element(DataType type, double v) { return type == DataType::Bool ? std::fmod(v, 2.0) : v; }

// The types a backend refuses to reduce, as it documents: NCCL has no 16-bit
// integer type. Such a call must fail with Unsupported, naming the type.
bool reduction_refused(DataType type) {
  return type == DataType::Int16 && trainrun::test::device_memory() && comm().backend_name() == "nccl";
}
template <typename Call>
void check_refused(const char* what, DataType type, Call call) {
  try {
    call();
    CHECK_MESSAGE(false, what << " of " << trainrun::to_string(type) << " was accepted");
  } catch (const trainrun::Error& e) {
    CHECK(e.code() == trainrun::Error::Code::Unsupported);
    CHECK_MESSAGE(std::string(e.what()).find(std::string("reduce ") + trainrun::to_string(type)) != std::string::npos,
                  e.what());
  }
}

std::string describe(const char* what, DataType type, ReduceOp op, std::size_t count, bool in_place) {
  return std::string(what) + " " + trainrun::to_string(type) + " " + trainrun::to_string(op) +
         " count=" + std::to_string(count) + (in_place ? " in-place" : "") + " np=" + std::to_string(comm().size()) +
         " rank=" + std::to_string(comm().rank());
}

// Average divides in the dtype's precision, so allow one rounding step.
double tolerance(DataType type, ReduceOp op) {
  if (op != ReduceOp::Average || !trainrun::is_floating(type)) return 0.0;
  switch (type) {
    case DataType::Float16: return 1e-3;
    case DataType::BFloat16: return 8e-3;
    case DataType::Float32: return 1e-6;
    default: return 1e-12;
  }
}

}  // namespace

TEST_CASE("world is consistent") {
  CHECK(comm().size() >= 1);
  CHECK(comm().rank() >= 0);
  CHECK(comm().rank() < comm().size());
  CHECK(comm().local_rank() < comm().local_size());
  CHECK(comm().cross_rank() < comm().cross_size());
  CHECK(!comm().backend_name().empty());
  int32_t rank = comm().rank(), sum = 0;
  comm().allreduce(&rank, &sum, 1, DataType::Int32, ReduceOp::Sum);
  CHECK(sum == comm().size() * (comm().size() - 1) / 2);
}

// CONFORMANCE_TRANSPORT=shm|tcp (set by the meson registrations of the tcp
// runs): whether this rank maps the shared-memory transport's segment.
TEST_CASE("the transport is the one the run expects") {
  const char* expected = std::getenv("CONFORMANCE_TRANSPORT");
  if (!expected) return;
  std::ifstream maps("/proc/self/maps");
  const std::string all((std::istreambuf_iterator<char>(maps)), std::istreambuf_iterator<char>());
  const bool mapped = all.find("memfd:trainrun-shm") != std::string::npos;
  CHECK_MESSAGE(mapped == (std::string(expected) == "shm"), "expected transport " << expected);
}

// On one host with shared memory every rank maps every local rank's heap
// (Communicator::allocate_memory's memory, which the allreduce reads in place).
TEST_CASE("every rank maps the heap of every rank on its host") {
  const char* expected = std::getenv("CONFORMANCE_TRANSPORT");
  if (!expected || std::string(expected) != "shm" || comm().local_size() != comm().size()) return;
  std::ifstream maps("/proc/self/maps");
  int heaps = 0;
  for (std::string line; std::getline(maps, line);) heaps += line.find("memfd:trainrun-heap") != std::string::npos;
  CHECK(heaps == comm().local_size());
}

TEST_CASE("allreduce: every dtype, op and count, in place and not") {
  const int r = comm().rank(), n = comm().size();
  for (DataType type : trainrun::kAllDataTypes) {
    if (reduction_refused(type)) {
      TypedBuffer buf(type, 8);
      check_refused("allreduce", type, [&] { comm().allreduce(buf.data(), buf.data(), 8, type, ReduceOp::Sum); });
      continue;
    }
    for (ReduceOp op : trainrun::kAllReduceOps) {
      for (std::size_t count : kCounts) {
        for (bool in_place : {false, true}) {
          TypedBuffer send(type, count), recv(type, count);
          for (std::size_t i = 0; i < count; ++i) send.set(i, contribution(op, type, r, i));
          recv.fill(-1);
          if (in_place) {
            comm().allreduce(send.data(), send.data(), count, type, op);
          } else {
            comm().allreduce(send.data(), recv.data(), count, type, op);
          }
          const TypedBuffer& out = in_place ? send : recv;
          const auto bad =
              out.first_mismatch([&](std::size_t i) { return reduced(op, type, n, i); }, tolerance(type, op));
          CHECK_MESSAGE(!bad, describe("allreduce", type, op, count, in_place) << ": " << *bad);
        }
      }
    }
  }
}

// Buffers from Communicator::allocate_memory: on one host with shared
// memory the allreduce reads them in place from 64 KiB
// (backends/shm/shm_collectives.h); elsewhere they are ordinary memory.
class AllocatedMemory final : public trainrun::test::DeviceMemory {
 public:
  bool usable(std::string&) override { return true; }
  void* allocate(std::size_t bytes) override { return comm().allocate_memory(bytes); }
  void release(void* pointer) override { comm().free_memory(pointer); }
  void copy(void* to, const void* from, std::size_t bytes) override { std::memcpy(to, from, bytes); }
};

// Every dtype and op where the in-place path runs (one host, shared
// memory); elsewhere the memory is ordinary and the test above covers the
// dtypes and ops, so one of each proves the memory usable.
TEST_CASE("allreduce of memory from allocate_memory: every dtype and op, about the in-place size") {
  if (trainrun::test::device_memory()) return;  // a CUDA run: the buffers are device memory
  const int r = comm().rank(), n = comm().size();
  const char* expected = std::getenv("CONFORMANCE_TRANSPORT");
  const bool in_place_path = expected && std::string(expected) == "shm" && comm().local_size() == n;
  const std::vector<DataType> types =
      in_place_path ? std::vector<DataType>(std::begin(trainrun::kAllDataTypes), std::end(trainrun::kAllDataTypes))
                    : std::vector<DataType>{DataType::Float32};
  const std::vector<ReduceOp> ops =
      in_place_path ? std::vector<ReduceOp>(std::begin(trainrun::kAllReduceOps), std::end(trainrun::kAllReduceOps))
                    : std::vector<ReduceOp>{ReduceOp::Sum};
  AllocatedMemory allocated;
  for (DataType type : types) {
    const std::size_t at = (64u << 10) / trainrun::size_of(type);
    for (ReduceOp op : ops) {
      // Either side of the switch, in place and not; past a MiB (many of
      // the 16 KiB pieces each rank reduces); the last two with rank 0's
      // buffers its own, so the ranks that posted theirs start the copy
      // path over with it.
      for (const auto& [count, in_place, mine] :
           {std::tuple{at - 1, false, false}, std::tuple{at + 1, true, false}, std::tuple{3 * at + 7, false, false},
            std::tuple{17 * at + 3, true, false}, std::tuple{at + 1, true, true},
            std::tuple{17 * at + 3, false, true}}) {
        trainrun::test::DeviceMemory* memory = mine && r == 0 ? nullptr : &allocated;
        TypedBuffer send(type, count, memory), recv(type, count, memory);
        for (std::size_t i = 0; i < count; ++i) send.set(i, contribution(op, type, r, i));
        recv.fill(-1);
        comm().allreduce(send.data(), in_place ? send.data() : recv.data(), count, type, op);
        const TypedBuffer& out = in_place ? send : recv;
        const auto bad =
            out.first_mismatch([&](std::size_t i) { return reduced(op, type, n, i); }, tolerance(type, op));
        CHECK_MESSAGE(!bad, describe("allreduce (allocate_memory)", type, op, count, in_place) << ": " << *bad);
      }
    }
  }
}

// Where the ranks' results together pass the shared cache (from 16 MiB at
// 2 ranks with 32 MiB of L3) the in-place path writes them into every
// rank's recv past the caches: every dtype there, a count that leaves an
// odd tail, in place and not. Only where CONFORMANCE_LARGE_BLOCKS is set
// (the shared-memory runs).
TEST_CASE("allreduce of memory from allocate_memory past the shared cache: every dtype, streamed results") {
  if (!std::getenv("CONFORMANCE_LARGE_BLOCKS") || trainrun::test::device_memory()) return;
  const int r = comm().rank(), n = comm().size();
  AllocatedMemory allocated;
  for (DataType type : trainrun::kAllDataTypes) {
    const std::size_t count = (std::size_t{20} << 20) / trainrun::size_of(type) + 5;
    for (bool in_place : {false, true}) {
      TypedBuffer send(type, count, &allocated), recv(type, count, &allocated);
      for (std::size_t i = 0; i < count; ++i) send.set(i, contribution(ReduceOp::Sum, type, r, i));
      recv.fill(-1);
      comm().allreduce(send.data(), in_place ? send.data() : recv.data(), count, type, ReduceOp::Sum);
      const TypedBuffer& out = in_place ? send : recv;
      const auto bad = out.first_mismatch([&](std::size_t i) { return reduced(ReduceOp::Sum, type, n, i); },
                                          tolerance(type, ReduceOp::Sum));
      CHECK_MESSAGE(!bad, describe("allreduce (allocate_memory, streamed)", type, ReduceOp::Sum, count, in_place)
                              << ": " << *bad);
    }
  }
}

// The sizes where the tcp backend's allreduce across hosts changes
// algorithm: the cost model's for 2-8 hosts of 2-8 ranks (contract/switch_points.h:
// split from 8-128 KiB, pipeline chunks of 256 KiB, a last chunk short), and
// every size TRAINRUN_SWITCH_POINTS names. This program sees only the public API,
// so it reads the override's numbers itself.
static std::vector<std::size_t> switch_sizes() {
  std::vector<std::size_t> sizes = {8192, 16384, 32768, 65536, 131072, 256u << 10, (512u << 10) + 12};
  const char* spec = std::getenv("TRAINRUN_SWITCH_POINTS");
  for (const char* at = spec; at && (at = std::strchr(at, '=')); ++at) {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(at + 1, &end, 10);
    const std::size_t scale = *end == 'K' ? 1024 : *end == 'M' ? 1024 * 1024 : 1;
    if (end != at + 1) sizes.insert(sizes.end(), {v * scale, 3 * v * scale + 12});
  }
  return sizes;
}

// Sizes just below, at and just above each switch point. On one host, or
// on another backend, they are just more sizes.
TEST_CASE("allreduce just below and above the cross-host switch points") {
  const int r = comm().rank(), n = comm().size();
  for (DataType type : {DataType::Float32, DataType::Float64, DataType::Float16, DataType::Int8}) {
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max}) {
      for (std::size_t bytes : switch_sizes()) {
        const std::size_t at = bytes / trainrun::size_of(type);
        for (std::size_t count : {at > 0 ? at - 1 : 0, at, at + 1}) {
          for (bool in_place : {false, true}) {
            TypedBuffer send(type, count), recv(type, count);
            for (std::size_t i = 0; i < count; ++i) send.set(i, contribution(op, type, r, i));
            comm().allreduce(send.data(), in_place ? send.data() : recv.data(), count, type, op);
            const TypedBuffer& out = in_place ? send : recv;
            const auto bad = out.first_mismatch([&](std::size_t i) { return reduced(op, type, n, i); }, 0.0);
            CHECK_MESSAGE(!bad, describe("allreduce", type, op, count, in_place) << ": " << *bad);
          }
        }
      }
    }
  }
}

TEST_CASE("reducescatter: every dtype and op, in place and not") {
  const int r = comm().rank(), n = comm().size();
  for (DataType type : trainrun::kAllDataTypes) {
    if (reduction_refused(type)) {
      TypedBuffer send(type, 8 * n), recv(type, 8);
      check_refused("reducescatter", type,
                    [&] { comm().reducescatter(send.data(), recv.data(), 8, type, ReduceOp::Sum); });
      continue;
    }
    for (ReduceOp op : trainrun::kAllReduceOps) {
      for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{513}, std::size_t{1} << 18}) {
        for (bool in_place : {false, true}) {
          TypedBuffer send(type, count * n), recv(type, count);
          for (std::size_t i = 0; i < count * n; ++i) send.set(i, contribution(op, type, r, i));
          recv.fill(-1);
          comm().reducescatter(send.data(), in_place ? send.data() : recv.data(), count, type, op);
          const TypedBuffer& out = in_place ? send : recv;
          const auto bad = out.first_mismatch([&](std::size_t i) { return reduced(op, type, n, r * count + i); },
                                              tolerance(type, op), count);
          CHECK_MESSAGE(!bad, describe("reducescatter", type, op, count, in_place) << ": " << *bad);
        }
      }
    }
  }
}

// Off the root, recv is never written and send never changes. Roots: the
// first, a middle and the last rank (every root at 16 ranks costs minutes
// and exercises nothing the three do not).
TEST_CASE("reduce: every dtype and op, three roots, in place and not") {
  const int r = comm().rank(), n = comm().size();
  for (DataType type : trainrun::kAllDataTypes) {
    if (reduction_refused(type)) {
      TypedBuffer buf(type, 8);
      check_refused("reduce", type, [&] { comm().reduce(buf.data(), buf.data(), 8, type, ReduceOp::Sum, 0); });
      continue;
    }
    for (ReduceOp op : trainrun::kAllReduceOps) {
      for (int root : std::set<int>{0, n / 2, n - 1}) {
        for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{1001}, std::size_t{1} << 16}) {
          for (bool in_place : {false, true}) {
            TypedBuffer send(type, count), recv(type, count), unset(type, count);
            for (std::size_t i = 0; i < count; ++i) send.set(i, contribution(op, type, r, i));
            recv.fill(-1);
            unset.fill(-1);
            comm().reduce(send.data(), in_place ? send.data() : recv.data(), count, type, op, root);
            const TypedBuffer& out = in_place ? send : recv;
            const auto bad =
                r == root
                    ? out.first_mismatch([&](std::size_t i) { return reduced(op, type, n, i); }, tolerance(type, op))
                    : send.first_mismatch([&](std::size_t i) { return contribution(op, type, r, i); }, 0.0);
            const auto untouched =
                r == root || in_place ? bad : recv.first_mismatch([&](std::size_t i) { return unset.get(i); }, 0.0);
            CHECK_MESSAGE(!bad, describe("reduce", type, op, count, in_place) << " root=" << root << ": " << *bad);
            CHECK_MESSAGE(!untouched, describe("reduce", type, op, count, in_place)
                                          << " root=" << root << ": recv written: " << *untouched);
          }
        }
      }
    }
  }
}

TEST_CASE("broadcast from every root") {
  const int r = comm().rank(), n = comm().size();
  for (DataType type : trainrun::kAllDataTypes) {
    for (int root = 0; root < n; ++root) {
      for (std::size_t count : kCounts) {
        TypedBuffer buf(type, count);
        auto value = [&](std::size_t i) { return element(type, static_cast<double>((root * 7 + i) % 100)); };
        if (r == root) {
          for (std::size_t i = 0; i < count; ++i) buf.set(i, value(i));
        } else {
          buf.fill(-1);
        }
        comm().broadcast(buf.data(), count, type, root);
        const auto bad = buf.first_mismatch(value, 0.0);
        CHECK_MESSAGE(!bad, describe("broadcast", type, ReduceOp::Sum, count, true)
                                << " root=" << root << ": " << *bad);
      }
    }
  }
}

TEST_CASE("allgather, in place and not") {
  const int r = comm().rank(), n = comm().size();
  for (DataType type : trainrun::kAllDataTypes) {
    for (std::size_t count : kCounts) {
      for (bool in_place : {false, true}) {
        auto value = [&](int rank, std::size_t i) { return element(type, static_cast<double>((rank * 17 + i) % 100)); };
        TypedBuffer send(type, count), recv(type, count * n);
        recv.fill(-1);
        for (std::size_t i = 0; i < count; ++i) {
          (in_place ? recv : send).set(in_place ? r * count + i : i, value(r, i));
        }
        comm().allgather(in_place ? recv.data() : send.data(), recv.data(), count, type);
        const auto bad =
            recv.first_mismatch([&](std::size_t i) { return value(static_cast<int>(i / count), i % count); }, 0.0);
        CHECK_MESSAGE(!bad, describe("allgather", type, ReduceOp::Sum, count, in_place) << ": " << *bad);
      }
    }
  }
}

// Blocks larger than a connection's buffers hold, across hosts: a rank
// must not wait in shared memory with part of its block unsent (that hung
// for good). Only where CONFORMANCE_LARGE_BLOCKS is set (tests/integration/
// test_ssh.cc, and the shared-memory runs, where these sizes write past the
// caches): 16 MiB per rank.
TEST_CASE("allgather, allreduce and reducescatter of blocks larger than the sockets hold") {
  if (!std::getenv("CONFORMANCE_LARGE_BLOCKS")) return;
  const int r = comm().rank(), n = comm().size();
  const std::size_t count = std::size_t(4) << 20;
  for (int repeat = 0; repeat < 3; ++repeat) {
    std::vector<float> send(count), recv(count * n, -1.0f);
    for (std::size_t i = 0; i < count; ++i) send[i] = static_cast<float>((r * 7 + i + repeat) % 1000);
    comm().allgather(send.data(), recv.data(), count, DataType::Float32);
    std::size_t bad = 0;
    for (std::size_t i = 0; i < recv.size(); ++i) {
      bad += recv[i] != static_cast<float>((static_cast<int>(i / count) * 7 + i % count + repeat) % 1000);
    }
    CHECK_MESSAGE(bad == 0, "allgather of " << count << " floats per rank: " << bad << " wrong");
    comm().allreduce(send.data(), recv.data(), count, DataType::Float32, ReduceOp::Sum);
    bad = 0;
    for (std::size_t i = 0; i < count; ++i) {
      float sum = 0;
      for (int k = 0; k < n; ++k) sum += static_cast<float>((k * 7 + i + repeat) % 1000);
      bad += recv[i] != sum;
    }
    CHECK_MESSAGE(bad == 0, "allreduce of " << count << " floats: " << bad << " wrong");
    // send: n blocks of count / 4 (each rank's 4 MiB); rank k adds k + 1 to element i.
    const std::size_t block = count / 4;
    send.resize(block * n);
    for (std::size_t i = 0; i < send.size(); ++i) send[i] = static_cast<float>((i + repeat) % 1000 * (r + 1));
    comm().reducescatter(send.data(), recv.data(), block, DataType::Float32, ReduceOp::Sum);
    bad = 0;
    for (std::size_t i = 0; i < block; ++i) {
      bad += recv[i] != static_cast<float>((r * block + i + repeat) % 1000 * (n * (n + 1) / 2));
    }
    CHECK_MESSAGE(bad == 0, "reducescatter of " << block << " floats per rank: " << bad << " wrong");
  }
}

TEST_CASE("allgatherv with uneven counts, one of them zero") {
  const int r = comm().rank(), n = comm().size();
  for (DataType type : trainrun::kAllDataTypes) {
    for (std::size_t base : {std::size_t{0}, std::size_t{1}, std::size_t{999}, std::size_t{1} << 18}) {
      for (bool in_place : {false, true}) {
        std::vector<std::size_t> counts(n), offsets(n + 1, 0);
        for (int k = 0; k < n; ++k) {
          counts[k] = (k == 1) ? 0 : base + 3 * k;
          offsets[k + 1] = offsets[k] + counts[k];
        }
        auto value = [&](int rank, std::size_t i) { return element(type, static_cast<double>((rank * 31 + i) % 97)); };
        TypedBuffer send(type, counts[r]), recv(type, offsets[n]);
        recv.fill(-1);
        for (std::size_t i = 0; i < counts[r]; ++i) {
          (in_place ? recv : send).set(in_place ? offsets[r] + i : i, value(r, i));
        }
        comm().allgatherv(in_place ? recv.data() : send.data(), counts[r], recv.data(), counts, type);
        const auto bad = recv.first_mismatch(
            [&](std::size_t i) {
              int k = 0;
              while (i >= offsets[k + 1]) ++k;
              return value(k, i - offsets[k]);
            },
            0.0);
        CHECK_MESSAGE(!bad, describe("allgatherv", type, ReduceOp::Sum, base, in_place) << ": " << *bad);
      }
    }
  }
}

TEST_CASE("alltoall, in place and not") {
  const int r = comm().rank(), n = comm().size();
  for (DataType type : trainrun::kAllDataTypes) {
    for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{333}, std::size_t{1} << 17}) {
      for (bool in_place : {false, true}) {
        // Element i of the block rank `from` sends to rank `to`.
        auto value = [&](int from, int to, std::size_t i) {
          return element(type, static_cast<double>((from * 31 + to * 7 + i) % 100));
        };
        TypedBuffer send(type, count * n), recv(type, count * n);
        for (int to = 0; to < n; ++to) {
          for (std::size_t i = 0; i < count; ++i) send.set(to * count + i, value(r, to, i));
        }
        recv.fill(-1);
        TypedBuffer& out = in_place ? send : recv;
        comm().alltoall(send.data(), out.data(), count, type);
        const auto bad =
            out.first_mismatch([&](std::size_t i) { return value(static_cast<int>(i / count), r, i % count); }, 0.0);
        CHECK_MESSAGE(!bad, describe("alltoall", type, ReduceOp::Sum, count, in_place) << ": " << *bad);
      }
    }
  }
}

TEST_CASE("float reductions give bit-identical results on every rank") {
  // Rounding depends on the order of additions; every rank must still end up
  // with the same bits, or replicas of a model drift apart.
  const int r = comm().rank(), n = comm().size();
  for (DataType type : {DataType::Float32, DataType::Float16, DataType::BFloat16, DataType::Float64}) {
    for (std::size_t count : {std::size_t{3}, std::size_t{5000}, std::size_t{300000}}) {
      TypedBuffer data(type, count);
      std::uint64_t state = 0x9e3779b97f4a7c15ull * static_cast<std::uint64_t>(r + 1);
      for (std::size_t i = 0; i < count; ++i) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        data.set(i, static_cast<double>(state >> 11) / 9007199254740992.0 * 2.0 - 1.0);
      }
      comm().allreduce(data.data(), data.data(), count, type, ReduceOp::Sum);
      // FNV-1a of the result bytes, gathered from every rank.
      std::uint64_t hash = 1469598103934665603ull;
      const auto* bytes = static_cast<const unsigned char*>(data.host_data());
      for (std::size_t i = 0; i < count * trainrun::size_of(type); ++i) hash = (hash ^ bytes[i]) * 1099511628211ull;
      std::vector<std::uint64_t> hashes(n);
      comm().allgather(&hash, hashes.data(), 1, DataType::Int64);
      for (int k = 0; k < n; ++k) {
        CHECK_MESSAGE(hashes[k] == hashes[0], describe("allreduce", type, ReduceOp::Sum, count, true)
                                                  << ": rank " << k << " differs from rank 0");
      }
    }
  }
}

TEST_CASE("barrier and repeated small collectives keep ranks in step") {
  for (int iteration = 0; iteration < 200; ++iteration) {
    comm().barrier();
    int64_t v = iteration, out = 0;
    comm().allreduce(&v, &out, 1, DataType::Int64, ReduceOp::Max);
    CHECK(out == iteration);
  }
}

TEST_CASE("invalid arguments are rejected on every rank without communicating") {
  float x = 0;
  CHECK_THROWS_AS(comm().broadcast(&x, 1, DataType::Float32, comm().size()), trainrun::Error);
  CHECK_THROWS_AS(comm().broadcast(&x, 1, DataType::Float32, -1), trainrun::Error);
  CHECK_THROWS_AS(comm().reduce(&x, &x, 1, DataType::Float32, ReduceOp::Sum, comm().size()), trainrun::Error);
  CHECK_THROWS_AS(comm().reduce(&x, nullptr, 1, DataType::Float32, ReduceOp::Sum, comm().rank()), trainrun::Error);
  std::vector<std::size_t> wrong(comm().size() + 1, 1);
  CHECK_THROWS_AS(comm().allgatherv(&x, 1, &x, wrong, DataType::Float32), trainrun::Error);
  CHECK_THROWS_AS(comm().allreduce(nullptr, &x, 1, DataType::Float32, ReduceOp::Sum), trainrun::Error);
  try {
    comm().broadcast(&x, 1, DataType::Float32, comm().size());
  } catch (const trainrun::Error& e) {
    CHECK(e.code() == trainrun::Error::Code::InvalidArgument);
    const std::string message = e.what();
    CHECK(message.find("rank " + std::to_string(comm().rank())) != std::string::npos);
    CHECK(message.find("broadcast") != std::string::npos);
  }
  comm().barrier();
}

TEST_CASE("host and CUDA memory in one call are rejected, naming both") {
  if (!trainrun::test::device_memory()) return;
  TypedBuffer device(DataType::Float32, 4);
  std::vector<float> host(4, 1.0f);
  try {
    comm().allreduce(host.data(), device.data(), 4, DataType::Float32, ReduceOp::Sum);
    CHECK_MESSAGE(false, "an allreduce from host to CUDA memory was accepted");
  } catch (const trainrun::Error& e) {
    CHECK(e.code() == trainrun::Error::Code::InvalidArgument);
    const std::string message = e.what();
    CHECK_MESSAGE(message.find("send (") != std::string::npos, message);
    CHECK_MESSAGE(message.find("is host memory") != std::string::npos, message);
    CHECK_MESSAGE(message.find("recv (") != std::string::npos, message);
    CHECK_MESSAGE(message.find("is CUDA memory on device") != std::string::npos, message);
  }
  comm().barrier();
}

int main(int argc, char** argv) {
  trainrun::test::DeviceMemory* device = trainrun::test::device_memory();
  std::string why;
  if (device && !device->usable(why)) {
    std::printf("conformance: skipped: %s\n", why.c_str());
    return 77;
  }
  return trainrun::test::run_on_every_rank(argc, argv, "conformance", g_comm, device ? ", CUDA buffers" : "");
}
