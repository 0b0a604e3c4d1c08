#include "backends/routing.h"

#include <cstdio>

#include "contract/environment.h"
#include "trainrun/error.h"

namespace trainrun::detail {
namespace {

std::string describe(const BufferArg& b) {
  char address[32];
  std::snprintf(address, sizeof address, "%p", b.pointer);
  return std::string(b.role) + " (" + address + ") is " +
         (b.info.cuda ? "CUDA memory on device " + std::to_string(b.info.device) : "host memory");
}

// "rank 1 (h2: why), rank 3 (h4: why) and 5 more"
std::string list_problems(const std::vector<std::string>& problems) {
  constexpr int kShown = 3;
  std::string text;
  int listed = 0, more = 0;
  for (std::size_t r = 0; r < problems.size(); ++r) {
    if (problems[r].empty()) continue;
    if (listed == kShown) {
      ++more;
      continue;
    }
    text += (listed++ ? ", rank " : "rank ") + std::to_string(r) + " (" + problems[r] + ")";
  }
  if (more) text += " and " + std::to_string(more) + " more";
  return text;
}

}  // namespace

BufferInfo place_buffers(std::initializer_list<BufferArg> buffers) {
  const BufferArg* first = nullptr;
  for (const BufferArg& b : buffers) {
    if (!b.pointer) continue;
    if (!first) {
      first = &b;
      continue;
    }
    if (b.info.cuda != first->info.cuda || b.info.device != first->info.device) {
      throw Error(Error::Code::InvalidArgument,
                  describe(*first) + " but " + describe(b) +
                      ": one call's buffers must all be host memory or all on one CUDA device");
    }
  }
  return first ? first->info : BufferInfo{};
}

CudaPolicy cuda_policy(const std::string& requested_backend) {
  if (requested_backend.empty()) return CudaPolicy::Auto;
  return requested_backend == "nccl" ? CudaPolicy::Nccl : CudaPolicy::Staged;
}

CudaPath decide_cuda_path(CudaPolicy policy, const std::vector<std::string>& problems) {
  if (policy == CudaPolicy::Staged) return CudaPath::Staged;
  std::size_t unable = 0;
  for (const auto& p : problems) unable += p.empty() ? 0 : 1;
  if (unable == 0) return CudaPath::Nccl;
  if (policy == CudaPolicy::Nccl) {
    throw Error(Error::Code::Unsupported,
                std::string(contract::kEnvBackend) + "=nccl but NCCL cannot run on " + list_problems(problems));
  }
  if (unable == problems.size()) return CudaPath::Staged;
  throw Error(Error::Code::Unsupported,
              "NCCL runs on some ranks but not on " + list_problems(problems) +
                  ", so CUDA buffers would take different paths; make NCCL usable on every host, "
                  "or set " +
                  contract::kEnvBackend + "=tcp to stage CUDA buffers through host memory on every rank");
}

}  // namespace trainrun::detail
