#include "backends/nccl/cuda_device.h"

#include <string>

#include "contract/environment.h"
#include "trainrun/error.h"

namespace trainrun::detail {

int choose_cuda_device(const World& world, int visible_devices) {
  const std::string shown = std::to_string(visible_devices) + (visible_devices == 1 ? " is" : " are");
  if (visible_devices <= 0) {
    throw Error(
        Error::Code::Unsupported,
        std::string("no CUDA device is visible") +
            (world.cuda_visible_devices_set ? std::string(" (") + contract::kEnvCudaVisibleDevices + " is set)" : ""));
  }
  if (world.cuda_device >= 0) {
    if (world.cuda_device < visible_devices) return world.cuda_device;
    throw Error(Error::Code::InvalidArgument, std::string(contract::kEnvCudaDevice) + "=" +
                                                  std::to_string(world.cuda_device) + " but only " + shown +
                                                  " visible");
  }
  if (world.cuda_visible_devices_set && visible_devices == 1) return 0;
  if (world.local_rank < visible_devices) return world.local_rank;
  throw Error(Error::Code::InvalidArgument,
              "local rank " + std::to_string(world.local_rank) + " has no CUDA device of its own: " + shown +
                  " visible and NCCL needs one per rank (set " + contract::kEnvCudaDevice + " or " +
                  contract::kEnvCudaVisibleDevices + " per rank)");
}

}  // namespace trainrun::detail
