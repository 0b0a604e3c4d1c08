#include "cuda_memory.h"

#include <cuda_runtime_api.h>

#include <stdexcept>

namespace cuda_memory {
namespace {

void check(cudaError_t result, const char* call) {
  if (result != cudaSuccess) {
    throw std::runtime_error(std::string(call) + ": " + cudaGetErrorString(result) + " (" + cudaGetErrorName(result) +
                             ")");
  }
}

}  // namespace

bool usable(std::string& why) {
  int devices = 0;
  const cudaError_t result = cudaGetDeviceCount(&devices);
  if (result != cudaSuccess) {
    why = std::string("no CUDA device: cudaGetDeviceCount: ") + cudaGetErrorString(result) + " (" +
          cudaGetErrorName(result) + ")";
    return false;
  }
  if (devices == 0) why = "no CUDA device: cudaGetDeviceCount found none";
  return devices > 0;
}

void* allocate(std::size_t bytes) {
  void* pointer = nullptr;
  check(cudaMalloc(&pointer, bytes ? bytes : 1), "cudaMalloc");
  return pointer;
}

void release(void* pointer) noexcept { cudaFree(pointer); }

void copy(void* to, const void* from, std::size_t bytes) {
  check(cudaMemcpy(to, from, bytes, cudaMemcpyDefault), "cudaMemcpy");
}

void* allocate_pinned(std::size_t bytes) {
  void* pointer = nullptr;
  check(cudaHostAlloc(&pointer, bytes ? bytes : 1, cudaHostAllocPortable), "cudaHostAlloc");
  return pointer;
}

void release_pinned(void* pointer) noexcept { cudaFreeHost(pointer); }

void synchronize() { check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }

}  // namespace cuda_memory
