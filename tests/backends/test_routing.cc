// Routing of buffers (backends/routing.h), and the RoutedBackend that every
// communicator gets from the registry, on host buffers: what runs on every
// machine. CUDA buffers are tested on a GPU (conformance_cuda).
#include <doctest/doctest.h>

#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "backends/registry.h"
#include "backends/routing.h"
#include "contract/world.h"
#include "trainrun/error.h"

using namespace trainrun;
using namespace trainrun::detail;

namespace {

std::string error_of(void (*fn)(), Error::Code expected) {
  try {
    fn();
  } catch (const Error& e) {
    CHECK(e.code() == expected);
    return e.what();
  }
  FAIL("no error");
  return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

int a_host_int = 0;
float a_host_float = 0;
// Addresses are only compared and printed, never dereferenced: no device is faked.
const void* const kDevice0 = reinterpret_cast<const void*>(0x7f0000001000);
const void* const kDevice1 = reinterpret_cast<const void*>(0x7f0000002000);

}  // namespace

TEST_CASE("host buffers stay on the host, whatever else is null") {
  const BufferInfo where = place_buffers({{"send", &a_host_int, {}}, {"recv", &a_host_float, {}}});
  CHECK_FALSE(where.cuda);
  CHECK_FALSE(place_buffers({{"send", nullptr, {}}, {"recv", &a_host_int, {}}}).cuda);
  CHECK_FALSE(place_buffers({{"send", nullptr, {}}, {"recv", nullptr, {}}}).cuda);  // count 0
  CHECK_FALSE(place_buffers({{"buf", &a_host_int, {}}}).cuda);
}

TEST_CASE("CUDA buffers on one device go together; null ones do not count") {
  BufferInfo where = place_buffers({{"send", kDevice0, {true, 1}}, {"recv", kDevice1, {true, 1}}});
  CHECK(where.cuda);
  CHECK(where.device == 1);
  where = place_buffers({{"send", nullptr, {}}, {"recv", kDevice1, {true, 0}}});  // in-place allgather
  CHECK(where.cuda);
  CHECK(where.device == 0);
}

TEST_CASE("host and CUDA memory in one call: InvalidArgument naming both buffers") {
  const std::string message = error_of(
      [] {
        place_buffers({{"send", &a_host_int, {}}, {"recv", kDevice0, {true, 0}}});
      },
      Error::Code::InvalidArgument);
  CHECK(contains(message, "send (0x"));
  CHECK(contains(message, "is host memory"));
  CHECK(contains(message, "recv (0x7f0000001000) is CUDA memory on device 0"));
  const std::string reversed = error_of(
      [] {
        place_buffers({{"send", kDevice1, {true, 2}}, {"recv", &a_host_int, {}}});
      },
      Error::Code::InvalidArgument);
  CHECK(contains(reversed, "send (0x7f0000002000) is CUDA memory on device 2 but recv (0x"));
  const std::string devices = error_of(
      [] {
        place_buffers({{"send", kDevice0, {true, 0}}, {"recv", kDevice1, {true, 1}}});
      },
      Error::Code::InvalidArgument);
  CHECK(contains(devices, "on device 0 but recv (0x7f0000002000) is CUDA memory on device 1"));
}

TEST_CASE("TRAINRUN_BACKEND sets how CUDA buffers travel") {
  CHECK(cuda_policy("") == CudaPolicy::Auto);
  CHECK(cuda_policy("nccl") == CudaPolicy::Nccl);
  CHECK(cuda_policy("tcp") == CudaPolicy::Staged);
  CHECK(cuda_policy("mpi") == CudaPolicy::Staged);
}

TEST_CASE("the CUDA path every rank agrees on") {
  const std::vector<std::string> all_can(4), none_can(4, "h: no GPU");
  std::vector<std::string> one_cannot(4);
  one_cannot[2] = "h3: no NVIDIA driver on this host";
  struct Row {
    CudaPolicy policy;
    const std::vector<std::string>* problems;
    CudaPath expected;
  };
  const Row rows[] = {
      {CudaPolicy::Auto, &all_can, CudaPath::Nccl},        {CudaPolicy::Auto, &none_can, CudaPath::Staged},
      {CudaPolicy::Nccl, &all_can, CudaPath::Nccl},        {CudaPolicy::Staged, &all_can, CudaPath::Staged},
      {CudaPolicy::Staged, &one_cannot, CudaPath::Staged}, {CudaPolicy::Staged, &none_can, CudaPath::Staged},
  };
  for (const Row& row : rows) CHECK(decide_cuda_path(row.policy, *row.problems) == row.expected);

  for (CudaPolicy policy : {CudaPolicy::Auto, CudaPolicy::Nccl}) {
    try {
      decide_cuda_path(policy, one_cannot);
      FAIL("ranks that disagree were accepted");
    } catch (const Error& e) {
      CHECK(e.code() == Error::Code::Unsupported);
      CHECK(contains(e.what(), "rank 2 (h3: no NVIDIA driver on this host)"));
      CHECK(contains(e.what(), policy == CudaPolicy::Auto ? "TRAINRUN_BACKEND=tcp to stage"
                                                          : "TRAINRUN_BACKEND=nccl but NCCL cannot run"));
    }
  }
}

TEST_CASE("many ranks without NCCL are summed up, not listed") {
  std::vector<std::string> problems(100, "no GPU");
  problems[0] = "";
  try {
    decide_cuda_path(CudaPolicy::Auto, problems);
    FAIL("accepted");
  } catch (const Error& e) {
    CHECK(contains(e.what(), "rank 1 (no GPU), rank 2 (no GPU), rank 3 (no GPU) and 96 more"));
  }
}

// The backend every communicator gets, over a real single-process tcp backend.
TEST_CASE("host buffers through the registry's routed backend, aliased input included") {
  World world;
  world.hostname = "h1";
  auto backend = create_backend("tcp", BackendContext{world, nullptr, 0, {}});
  CHECK(backend->name() == "tcp");

  std::vector<std::int32_t> in = {1, 2, 3}, out(3, 0);
  backend->allreduce(in.data(), out.data(), 3, DataType::Int32, ReduceOp::Sum);
  backend->synchronize();
  CHECK(out == in);

  // send == recv reaches the router, which sets the input aside.
  std::vector<std::int32_t> buf = {7, 8};
  backend->alltoall(buf.data(), {2}, buf.data(), {2}, DataType::Int32);
  CHECK(buf == std::vector<std::int32_t>{7, 8});
  backend->reducescatter(buf.data(), buf.data(), {2}, DataType::Int32, ReduceOp::Sum);
  CHECK(buf == std::vector<std::int32_t>{7, 8});
}

TEST_CASE("an unknown backend is named with the ones this build has") {
  World world;
  try {
    create_backend("nccx", BackendContext{world, nullptr, 0, {}});
    FAIL("accepted");
  } catch (const Error& e) {
    CHECK(e.code() == Error::Code::InvalidArgument);
    CHECK(contains(e.what(), "backend 'nccx' is not available (this build has: "));
  }
}
