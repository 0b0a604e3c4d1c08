// The engine's device fusion copies (fusion_copy.h): block (x, y) copies
// its grid-stride share of buffer y, in 16-byte words where both ends are
// 16-byte aligned (the fusion buffer's offsets are 64-byte aligned; tensors
// from CUDA's allocators are 256-byte aligned), byte by byte otherwise.
// Built with `nvcc --ptx` into PTX that the driver compiles at load.
#include "backends/nccl/fusion_copy.h"

extern "C" __global__ void trainrun_fusion_copy(const trainrun::detail::FusionCopyTable table) {
  if (static_cast<int>(blockIdx.y) >= table.count) return;
  const trainrun::detail::FusionCopyEntry copy = table.entries[blockIdx.y];
  char* to = reinterpret_cast<char*>(copy.to);
  const char* from = reinterpret_cast<const char*>(copy.from);
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  const unsigned long long first = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  unsigned long long done = 0;
  if (((copy.to | copy.from) & 15) == 0) {
    const unsigned long long words = copy.bytes / 16;
    uint4* to_words = reinterpret_cast<uint4*>(to);
    const uint4* from_words = reinterpret_cast<const uint4*>(from);
    for (unsigned long long i = first; i < words; i += stride) to_words[i] = from_words[i];
    done = words * 16;
  }
  for (unsigned long long i = done + first; i < copy.bytes; i += stride) to[i] = from[i];
}
