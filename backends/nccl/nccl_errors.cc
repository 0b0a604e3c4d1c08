#include "backends/nccl/nccl_errors.h"

namespace trainrun::detail {

Error::Code error_code_of(ncclResult_t result) {
  switch (result) {
    case ncclInvalidArgument:
    case ncclInvalidUsage: return Error::Code::InvalidArgument;
    case ncclSystemError:                          // a socket or system call failed
    case ncclRemoteError: return Error::Code::Io;  // a peer died or the network failed
    case ncclSuccess:
    case ncclInProgress: return Error::Code::Internal;  // not failures: a caller bug to translate them
    default: return Error::Code::Backend;
  }
}

Error::Code error_code_of(CUresult result) {
  switch (result) {
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_INVALID_DEVICE:
    case CUDA_ERROR_INVALID_CONTEXT:
    case CUDA_ERROR_INVALID_HANDLE: return Error::Code::InvalidArgument;
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER:
    case CUDA_ERROR_STUB_LIBRARY:
    case CUDA_ERROR_DEVICE_UNAVAILABLE:
    case CUDA_ERROR_NOT_SUPPORTED:
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
    case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE: return Error::Code::Unsupported;
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_TIMEOUT: return Error::Code::Timeout;
    case CUDA_SUCCESS:
    case CUDA_ERROR_NOT_READY: return Error::Code::Internal;  // not failures
    default: return Error::Code::Backend;
  }
}

std::string name_of(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "ncclSuccess";
    case ncclUnhandledCudaError: return "ncclUnhandledCudaError";
    case ncclSystemError: return "ncclSystemError";
    case ncclInternalError: return "ncclInternalError";
    case ncclInvalidArgument: return "ncclInvalidArgument";
    case ncclInvalidUsage: return "ncclInvalidUsage";
    case ncclRemoteError: return "ncclRemoteError";
    case ncclInProgress: return "ncclInProgress";
    default: return "ncclResult_t " + std::to_string(static_cast<int>(result));
  }
}

Error nccl_error(ncclResult_t result, const char* call, const char* description, const char* detail) {
  std::string message = std::string(call) + ": " + name_of(result);
  if (description && *description) message += std::string(" (") + description + ")";
  if (detail && *detail) message += std::string(": ") + detail;
  return Error(error_code_of(result), message);
}

Error cuda_error(CUresult result, const char* call, const char* name, const char* description) {
  std::string message =
      std::string(call) + ": " + (name ? std::string(name) : "CUDA error " + std::to_string(static_cast<int>(result)));
  if (description && *description) message += std::string(" (") + description + ")";
  return Error(error_code_of(result), message);
}

}  // namespace trainrun::detail
