// Device memory through the CUDA runtime, for the programs that run trainrun
// on CUDA buffers: allreduce_bench --device cuda and the CUDA conformance
// run. Built from cuda_memory.cc when meson finds CUDA, else from
// no_cuda_memory.cc, which says so. Thin wrappers; thread-safe as CUDA is.
#pragma once

#include <cstddef>
#include <string>

namespace cuda_memory {

// Whether this process can allocate CUDA memory; `why` says why not.
bool usable(std::string& why);
// On the current CUDA device. Throws std::runtime_error naming the error.
void* allocate(std::size_t bytes);
void release(void* pointer) noexcept;
// Between host and device memory, either way; synchronous.
void copy(void* to, const void* from, std::size_t bytes);
// Pinned host memory, as trainrun's staging uses; freed by release_pinned.
void* allocate_pinned(std::size_t bytes);
void release_pinned(void* pointer) noexcept;
// Waits until the current device has finished all its work.
void synchronize();

}  // namespace cuda_memory
