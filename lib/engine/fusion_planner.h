// Fusion planning: which of a cycle's ready responses run together in one
// backend call, and where each tensor sits in the fusion buffer.
// Allreduces with the same dtype, reduce op, device and scales are packed,
// in response order, into batches of at most `threshold` bytes (0: no
// fusion); host and CUDA memory never share a batch (the fusion buffer is
// of the tensors' kind). A tensor of kInPlaceMinBytes or more (host) or
// kDeviceInPlaceMinBytes or more (CUDA) is never packed: it is reduced in
// place, alone, because copying it into the buffer and back costs more
// than the backend call it would save. Host (tcp backend, 2 ranks): a call
// costs ~20 us, copying in and out ~0.5 ns per byte, so fusing stops paying
// at ~40 KB; the ResNet-50 set ran 113 ms fully packed against 60 ms with
// tensors >= 256 KiB in place. CUDA (NCCL): a call costs ~15 us to launch
// and settle, a device copy in and out ~1.3 ps per byte (H200, 3 TB/s
// read+write), so one call saved pays for ~11 MB of copies; past 4 MiB the
// copies' share of a cross-GPU reduction grows while the calls saved do not
// (tensors that large are few). Every other op runs alone.
// Pure and deterministic: every rank plans the same batches.
#pragma once

#include <cstddef>
#include <vector>

#include "lib/engine/coordinator.h"

namespace trainrun::detail {

inline constexpr std::size_t kInPlaceMinBytes = 256 * 1024;
inline constexpr std::size_t kDeviceInPlaceMinBytes = 4 * 1024 * 1024;
// Offsets in the fusion buffer are multiples of this (a cache line).
inline constexpr std::size_t kFusionAlignment = 64;

struct FusionItem {
  std::size_t response = 0;  // index into the cycle's responses
  std::size_t member = 0;    // which member of a grouped allreduce (0 otherwise)
  std::size_t offset = 0;    // bytes into the fusion buffer (fused batches)
  std::size_t bytes = 0;
};

struct Batch {
  std::vector<FusionItem> items;
  bool fused = false;     // items share the fusion buffer
  std::size_t bytes = 0;  // extent in the fusion buffer
};

std::vector<Batch> plan_batches(const std::vector<Response>& responses, std::size_t threshold);

}  // namespace trainrun::detail
