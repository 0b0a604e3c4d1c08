// Which CUDA device a rank's NCCL communicator uses, and the errors that
// name the setting when the choice cannot work.
#include <doctest/doctest.h>

#include <string>

#include "backends/nccl/cuda_device.h"
#include "trainrun/error.h"

using namespace trainrun;
using namespace trainrun::detail;

namespace {

World world_with(int local_rank, int cuda_device, bool visible_set) {
  World w;
  w.local_rank = local_rank;
  w.local_size = 8;
  w.cuda_device = cuda_device;
  w.cuda_visible_devices_set = visible_set;
  return w;
}

std::string error_of(const World& w, int visible, Error::Code expected) {
  try {
    choose_cuda_device(w, visible);
  } catch (const Error& e) {
    CHECK(e.code() == expected);
    return e.what();
  }
  FAIL("no error");
  return "";
}

}  // namespace

TEST_CASE("the device: TRAINRUN_CUDA_DEVICE, else the one CUDA_VISIBLE_DEVICES leaves, else the local rank") {
  struct Row {
    int local_rank, cuda_device;
    bool visible_set;
    int visible, expected;
  };
  const Row rows[] = {
      {0, -1, false, 8, 0}, {5, -1, false, 8, 5}, {3, 1, false, 8, 1},
      {3, 0, true, 1, 0},   {3, -1, true, 1, 0},  // a scheduler bound this rank to its GPU
      {1, -1, true, 4, 1},  // CUDA_VISIBLE_DEVICES=4,5,6,7: the local rank indexes the visible ones
  };
  for (const Row& r : rows) {
    CAPTURE(r.local_rank);
    CAPTURE(r.cuda_device);
    CHECK(choose_cuda_device(world_with(r.local_rank, r.cuda_device, r.visible_set), r.visible) == r.expected);
  }
}

TEST_CASE("choices that cannot work name the setting") {
  CHECK(error_of(world_with(0, -1, false), 0, Error::Code::Unsupported) == "no CUDA device is visible");
  CHECK(error_of(world_with(0, -1, true), 0, Error::Code::Unsupported) ==
        "no CUDA device is visible (CUDA_VISIBLE_DEVICES is set)");
  CHECK(error_of(world_with(0, 2, false), 2, Error::Code::InvalidArgument) ==
        "TRAINRUN_CUDA_DEVICE=2 but only 2 are visible");
  CHECK(error_of(world_with(1, -1, false), 1, Error::Code::InvalidArgument) ==
        "local rank 1 has no CUDA device of its own: 1 is visible and NCCL needs one per rank "
        "(set TRAINRUN_CUDA_DEVICE or CUDA_VISIBLE_DEVICES per rank)");
}
