// Every NCCL and CUDA driver result code becomes the right trainrun::Error,
// with the library's own words where this host has the library.
#include <doctest/doctest.h>

#include <string>

#include "backends/nccl/nccl_errors.h"
#include "backends/nccl/nccl_library.h"

using namespace trainrun;
using namespace trainrun::detail;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// NCCL loads on any host that has it (a GPU is not needed for its strings).
const NcclLibrary* nccl_here() {
  try {
    return &NcclLibrary::load();
  } catch (const Error& e) {
    MESSAGE("NCCL is not loadable here, its own strings are not checked: " << e.what());
    return nullptr;
  }
}

}  // namespace

TEST_CASE("every ncclResult_t: its code, its name and NCCL's words") {
  struct Row {
    ncclResult_t result;
    const char* name;
    Error::Code code;
    const char* words;  // part of ncclGetErrorString's text
  };
  const Row rows[] = {
      {ncclUnhandledCudaError, "ncclUnhandledCudaError", Error::Code::Backend, "unhandled cuda error"},
      {ncclSystemError, "ncclSystemError", Error::Code::Io, "unhandled system error"},
      {ncclInternalError, "ncclInternalError", Error::Code::Backend, "internal error"},
      {ncclInvalidArgument, "ncclInvalidArgument", Error::Code::InvalidArgument, "invalid argument"},
      {ncclInvalidUsage, "ncclInvalidUsage", Error::Code::InvalidArgument, "invalid usage"},
      {ncclRemoteError, "ncclRemoteError", Error::Code::Io, "remote process exited"},
      // Not failures: translating them is a bug, and says so.
      {ncclSuccess, "ncclSuccess", Error::Code::Internal, "no error"},
      {ncclInProgress, "ncclInProgress", Error::Code::Internal, "NCCL operation in progress"},
      {static_cast<ncclResult_t>(42), "ncclResult_t 42", Error::Code::Backend, "unknown result code"},
  };
  CHECK(std::size(rows) == ncclNumResults + 1);  // every value of this NCCL, and one it does not know
  const NcclLibrary* nccl = nccl_here();
  for (const Row& row : rows) {
    const std::string name = row.name;
    CAPTURE(name);
    CHECK(error_code_of(row.result) == row.code);
    CHECK(name_of(row.result) == row.name);
    const Error bare = nccl_error(row.result, "ncclAllReduce", nullptr, nullptr);
    CHECK(bare.code() == row.code);
    CHECK(std::string(bare.what()) == std::string("ncclAllReduce: ") + row.name);
    const Error full = nccl_error(row.result, "ncclAllReduce", "what NCCL says", "NET/Socket: peer closed");
    CHECK(std::string(full.what()) ==
          std::string("ncclAllReduce: ") + row.name + " (what NCCL says): NET/Socket: peer closed");
    if (nccl) {
      const std::string real = nccl->error(row.result, "ncclBroadcast", nullptr).what();
      CHECK_MESSAGE(contains(real, std::string("ncclBroadcast: ") + row.name + " (" + row.words), real);
    }
  }
}

TEST_CASE("CUDA driver results: the codes that mean something to a user") {
  struct Row {
    CUresult result;
    Error::Code code;
  };
  const Row rows[] = {
      {CUDA_ERROR_INVALID_VALUE, Error::Code::InvalidArgument},
      {CUDA_ERROR_INVALID_DEVICE, Error::Code::InvalidArgument},
      {CUDA_ERROR_INVALID_CONTEXT, Error::Code::InvalidArgument},
      {CUDA_ERROR_INVALID_HANDLE, Error::Code::InvalidArgument},
      {CUDA_ERROR_NO_DEVICE, Error::Code::Unsupported},
      {CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER, Error::Code::Unsupported},
      {CUDA_ERROR_STUB_LIBRARY, Error::Code::Unsupported},
      {CUDA_ERROR_DEVICE_UNAVAILABLE, Error::Code::Unsupported},
      {CUDA_ERROR_NOT_SUPPORTED, Error::Code::Unsupported},
      {CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, Error::Code::Unsupported},
      {CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, Error::Code::Unsupported},
      {CUDA_ERROR_LAUNCH_TIMEOUT, Error::Code::Timeout},
      {CUDA_ERROR_TIMEOUT, Error::Code::Timeout},
      {CUDA_ERROR_OUT_OF_MEMORY, Error::Code::Backend},
      {CUDA_ERROR_ILLEGAL_ADDRESS, Error::Code::Backend},
      {CUDA_ERROR_LAUNCH_FAILED, Error::Code::Backend},
      {CUDA_ERROR_ECC_UNCORRECTABLE, Error::Code::Backend},
      {CUDA_ERROR_UNKNOWN, Error::Code::Backend},
      {CUDA_SUCCESS, Error::Code::Internal},
      {CUDA_ERROR_NOT_READY, Error::Code::Internal},
  };
  for (const Row& row : rows) {
    CAPTURE(static_cast<int>(row.result));
    CHECK(error_code_of(row.result) == row.code);
  }
  const Error e = cuda_error(CUDA_ERROR_ILLEGAL_ADDRESS, "cuMemcpy", "CUDA_ERROR_ILLEGAL_ADDRESS",
                             "an illegal memory access was encountered");
  CHECK(std::string(e.what()) == "cuMemcpy: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)");
}

TEST_CASE("every CUDA driver result value translates, named by number when the driver is absent") {
  // CUresult values run from 0 to 999 (CUDA_ERROR_UNKNOWN).
  for (int value = 0; value <= CUDA_ERROR_UNKNOWN; ++value) {
    const auto result = static_cast<CUresult>(value);
    const Error e = cuda_error(result, "cuInit", nullptr, nullptr);
    CHECK(e.code() == error_code_of(result));
    CHECK(std::string(e.what()) == "cuInit: CUDA error " + std::to_string(value));
    const bool not_a_failure = result == CUDA_SUCCESS || result == CUDA_ERROR_NOT_READY;
    CHECK((e.code() == Error::Code::Internal) == not_a_failure);
  }
}
