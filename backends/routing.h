// The decisions behind RoutedBackend, as pure functions so that they are
// unit-tested without a GPU: which memory one call's buffers live in, and
// how a job moves CUDA buffers (NCCL, or staged through host memory).
// No state; safe from any thread.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

namespace trainrun::detail {

// What memory one buffer is.
struct BufferInfo {
  bool cuda = false;  // CUDA device (or managed) memory
  int device = -1;    // its CUDA device ordinal, when cuda
};

struct BufferArg {
  const char* role;  // "send", "recv", "buf": what errors call it
  const void* pointer;
  BufferInfo info;
};

// The memory all buffers of one call live in. Null pointers (count 0, the
// send of an in-place allgather) do not count. Throws Error(InvalidArgument)
// naming both buffers when host and CUDA memory mix, or two CUDA devices do.
BufferInfo place_buffers(std::initializer_list<BufferArg> buffers);

// How CUDA buffers travel in a job, from TRAINRUN_BACKEND.
enum class CudaPolicy {
  Auto,    // unset: through NCCL when every rank can run it, else staged
  Nccl,    // "nccl": through NCCL, or an error that says why not
  Staged,  // "tcp", "mpi": the user chose a CPU backend; stage through it
};
enum class CudaPath { Nccl, Staged };

CudaPolicy cuda_policy(const std::string& requested_backend);

// problems[r]: why rank r cannot run NCCL, "" when it can. Throws
// Error(Unsupported) naming the ranks and their reasons when the policy is
// Nccl and a rank cannot run it, or, under Auto, when some ranks can and
// others cannot: their CUDA buffers would take different paths and hang.
CudaPath decide_cuda_path(CudaPolicy policy, const std::vector<std::string>& problems);

}  // namespace trainrun::detail
