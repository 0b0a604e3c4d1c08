// NCCL and the CUDA driver loaded at run time, for real: what every host
// can check without a GPU (NCCL loads and names itself; the driver loads or
// says why not; host memory is host memory).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "backends/nccl/cuda_driver.h"
#include "backends/registry.h"
#include "backends/nccl/nccl_cuda_support.h"
#include "backends/nccl/nccl_library.h"
#include "backends/nccl/shared_library.h"
#include "trainrun/error.h"

using namespace trainrun;
using namespace trainrun::detail;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("NCCL loads at run time and names its version and file") {
  try {
    const std::string text = NcclLibrary::load().describe();
    CHECK_MESSAGE(text.rfind("NCCL 2.", 0) == 0, text);
    CHECK_MESSAGE(contains(text, "/libnccl.so.2)"), text);
  } catch (const Error& e) {
    CHECK(e.code() == Error::Code::Unsupported);
    CHECK_MESSAGE(contains(e.what(), "NCCL is not installed here (libnccl.so.2"), e.what());
  }
}

TEST_CASE("the CUDA driver loads, or the error says there is none") {
  try {
    const CudaDriver& driver = CudaDriver::load();
    CHECK(CudaDriver::in_process());
    CHECK_FALSE(driver.version().empty());
  } catch (const Error& e) {
    CHECK(e.code() == Error::Code::Unsupported);
    CHECK_MESSAGE(contains(e.what(), "no NVIDIA driver on this host (libcuda.so.1"), e.what());
    CHECK_FALSE(CudaDriver::in_process());
  }
}

TEST_CASE("shared libraries: a missing one, a missing symbol, and what is loaded") {
  std::string error;
  CHECK_FALSE(SharedLibrary::open("libtrainrun-absent.so.9", "/nonexistent", error));
  CHECK_MESSAGE(contains(error, "libtrainrun-absent.so.9"), error);

  auto libm = SharedLibrary::open("libm.so.6", "", error);
  REQUIRE(libm);
  CHECK(contains(libm->path(), "libm.so.6"));
  double (*cosine)(double) = nullptr;
  CHECK(libm->resolve(cosine, "cos", error));
  CHECK(cosine(0.0) == 1.0);
  CHECK_FALSE(libm->resolve(cosine, "trainrun_no_such_symbol", error));
  CHECK_MESSAGE(contains(error, "has no symbol trainrun_no_such_symbol"), error);

  CHECK(SharedLibrary::is_loaded("libm.so.6"));
  CHECK_FALSE(SharedLibrary::is_loaded("libtrainrun-absent.so.9"));
  const unsigned long long before = SharedLibrary::loads_so_far();
  CHECK(before > 0);
  CHECK(SharedLibrary::loads_so_far() >= before);
}

TEST_CASE("host memory is host memory, whether or not the driver is in the process") {
  NcclCudaSupport support;
  int on_stack = 0;
  std::vector<char> on_heap(1 << 20);
  CHECK_FALSE(support.inspect(&on_stack).cuda);
  CHECK_FALSE(support.inspect(on_heap.data()).cuda);
  CHECK_FALSE(support.inspect(nullptr).cuda);
}

TEST_CASE("check-build's line for NCCL: version and GPUs, or why it cannot run") {
  const std::string text = describe_nccl();
  const bool runs = contains(text, ", CUDA driver ");
  const bool says_why = contains(text, "cannot run here: ") || text.rfind("not usable here: ", 0) == 0;
  CHECK_MESSAGE(runs != says_why, text);
}

TEST_CASE("--backend nccl in a single process without a rendezvous: NCCL, or why not") {
  World world;
  world.hostname = "h1";
  world.backend = "nccl";
  try {
    auto backend = create_backend("nccl", BackendContext{world, nullptr, 0, {}});
    CHECK(backend->name() == "nccl");
    CHECK_MESSAGE(contains(describe_nccl(), ", CUDA driver "), "NCCL started where check-build says it cannot");
  } catch (const Error& e) {
    // The readiness exchange ran over the CPU backend (no store) and named this rank.
    CHECK(e.code() == Error::Code::Unsupported);
    CHECK_MESSAGE(contains(e.what(), "TRAINRUN_BACKEND=nccl but NCCL cannot run on rank 0 (h1: "), e.what());
    CHECK_FALSE(contains(describe_nccl(), ", CUDA driver "));
  }
}
