// Which CUDA device a rank's NCCL communicator uses (issue 8): the one
// TRAINRUN_CUDA_DEVICE names; else device 0 when CUDA_VISIBLE_DEVICES
// leaves this rank one GPU (a scheduler bound it); else the local rank,
// as with torchrun and horovodrun. NCCL runs one rank per GPU.
// Pure; safe from any thread.
#pragma once

#include "contract/world.h"

namespace trainrun::detail {

// `visible_devices`: how many devices the driver shows this process.
// Throws Error(Unsupported) when there is none, Error(InvalidArgument)
// naming the setting when the choice is not a visible device.
int choose_cuda_device(const World& world, int visible_devices);

}  // namespace trainrun::detail
