// How the CUDA driver's and NCCL's result codes become trainrun::Error
// (docs/design.md §5.6: C return codes become Error at the call site): an
// Error::Code saying what kind of failure it was, and a message naming the
// call, the result and what the library said about it. Pure functions;
// the callers pass the library's own strings. Safe from any thread.
#pragma once

#include <cuda.h>
#include <nccl.h>

#include <string>

#include "trainrun/error.h"

namespace trainrun::detail {

Error::Code error_code_of(ncclResult_t result);
Error::Code error_code_of(CUresult result);
// "ncclRemoteError"; "ncclResult_t 42" for a value this build does not know.
std::string name_of(ncclResult_t result);

// "ncclAllReduce: ncclRemoteError (remote process exited or there was a
// network error): NET/Socket: connection closed by peer". `description`
// is ncclGetErrorString's, `detail` ncclGetLastError's; either may be null.
Error nccl_error(ncclResult_t result, const char* call, const char* description, const char* detail);

// "cuMemcpy: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was
// encountered)". `name` and `description` are cuGetErrorName's and
// cuGetErrorString's; null when the driver does not know the code.
Error cuda_error(CUresult result, const char* call, const char* name, const char* description);

}  // namespace trainrun::detail
