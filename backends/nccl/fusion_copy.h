// The engine's device fusion copies as one kernel launch (docs/design.md
// §5.2): the table the kernel takes by value, shared by the kernel
// (fusion_copy.cu, compiled to PTX at build time when nvcc is found) and
// the code that launches it (nccl_cuda_support.cc, through the driver API:
// the PTX is JIT-compiled for the GPU when first loaded). Why a kernel:
// copying the 151 tensors of the ResNet-50 gradient set under 4 MiB on an
// H200 took 621 us of the host's time as one cuMemcpyDtoDAsync each and
// 582 us as one cuMemcpyBatchAsync (tests/bench/device_copy_bench.cu),
// more than the ~7 us per NCCL call that fusing saves; one launch takes
// 9 us of the host (34 us on the device). Plain data, no CUDA headers.
#pragma once

namespace trainrun::detail {

struct FusionCopyEntry {
  unsigned long long to;
  unsigned long long from;
  unsigned long long bytes;
};

// A launch copies up to this many buffers: the table (3 KiB) stays within
// the 4 KiB of kernel parameters every CUDA version takes.
inline constexpr int kFusionCopyTableSize = 128;
// Threads per block; a copy gets gridDim.x blocks (blockIdx.y picks the copy).
inline constexpr int kFusionCopyThreads = 256;
inline constexpr const char* kFusionCopyKernel = "trainrun_fusion_copy";

struct FusionCopyTable {
  FusionCopyEntry entries[kFusionCopyTableSize];
  int count;
};

// gridDim.x of a launch whose largest buffer has `bytes`: each thread copies
// ~8 words of 16 bytes, up to 256 blocks a buffer (~16 MiB in one pass).
inline unsigned fusion_copy_blocks(unsigned long long bytes) {
  const unsigned long long per_block = 8ull * 16 * kFusionCopyThreads;
  const unsigned long long blocks = (bytes + per_block - 1) / per_block;
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks > 256 ? 256 : blocks);
}

// The kernel as PTX text; empty in a build without nvcc (then each buffer
// is copied with its own cuMemcpyDtoDAsync).
extern const char kFusionCopyPtx[];

}  // namespace trainrun::detail
