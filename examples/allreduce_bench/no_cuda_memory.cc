// cuda_memory.h for builds without the CUDA toolkit: never usable.
#include <stdexcept>

#include "cuda_memory.h"

namespace cuda_memory {

bool usable(std::string& why) {
  why = "this program was built without the CUDA toolkit (meson -Dnccl=enabled)";
  return false;
}

void* allocate(std::size_t) { throw std::runtime_error("built without CUDA"); }
void release(void*) noexcept {}
void copy(void*, const void*, std::size_t) { throw std::runtime_error("built without CUDA"); }
void* allocate_pinned(std::size_t) { throw std::runtime_error("built without CUDA"); }
void release_pinned(void*) noexcept {}
void synchronize() { throw std::runtime_error("built without CUDA"); }

}  // namespace cuda_memory
