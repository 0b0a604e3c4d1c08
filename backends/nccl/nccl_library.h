// NcclLibrary: the NCCL entry points trainrun uses, resolved from
// libnccl.so.2 at run time (see SharedLibrary): NCCL is 200+ MB and most
// hosts that run trainrun or a program linked with libtrainrun.a have no
// GPU. The table is immutable once loaded; safe from any thread.
#pragma once

#include <nccl.h>

#include <string>

#include "trainrun/error.h"

namespace trainrun::detail {

// (clang-format does not keep an X-macro list stable)
// clang-format off
#define TRAINRUN_NCCL_FUNCTIONS(X)                                                        \
  X(ncclGetVersion) X(ncclGetUniqueId) X(ncclCommInitRankConfig) X(ncclCommFinalize)     \
  X(ncclCommDestroy) X(ncclCommAbort) X(ncclCommGetAsyncError) X(ncclGetErrorString)     \
  X(ncclGetLastError) X(ncclAllReduce) X(ncclAllGather) X(ncclBroadcast) X(ncclReduce)   \
  X(ncclReduceScatter) X(ncclSend) X(ncclRecv) X(ncclGroupStart) X(ncclGroupEnd)
// clang-format on

class NcclLibrary {
 public:
  static constexpr const char* kLibrary = "libnccl.so.2";
  // Nonblocking communicators (2.14), ncclGetLastError (2.13), ncclAvg and
  // bfloat16 (2.10); 2.18 is the oldest release tested against.
  static constexpr int kMinVersion = 21800;

  // Loads NCCL once per process: from the loader's path, else from the
  // directory the build found it in. Throws Error(Unsupported) saying why not.
  static const NcclLibrary& load();

  // The Error for a failed call, with NCCL's description and its last
  // error message for `comm` (may be null).
  Error error(ncclResult_t result, const char* call, ncclComm_t comm) const;
  // "NCCL 2.28.9 (/usr/local/cuda/lib/libnccl.so.2)"
  std::string describe() const;

#define TRAINRUN_NCCL_MEMBER(fn) decltype(&::fn) fn = nullptr;
  TRAINRUN_NCCL_FUNCTIONS(TRAINRUN_NCCL_MEMBER)
#undef TRAINRUN_NCCL_MEMBER

 private:
  NcclLibrary() = default;
  int version_ = 0;
  std::string path_;
};

}  // namespace trainrun::detail
