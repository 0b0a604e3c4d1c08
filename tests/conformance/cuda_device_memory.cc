// Linked with conformance.cc into conformance_cuda: installs CUDA device
// memory (the CUDA runtime, as user programs allocate it) behind
// TypedBuffer at start-up, so the whole conformance suite runs on CUDA
// buffers. It exits 77 (skip) when this host has no usable GPU.
#include "examples/allreduce_bench/cuda_memory.h"
#include "tests/conformance/typed_buffer.h"

namespace {

class CudaDeviceMemory final : public trainrun::test::DeviceMemory {
 public:
  bool usable(std::string& why) override { return cuda_memory::usable(why); }
  void* allocate(std::size_t bytes) override { return cuda_memory::allocate(bytes); }
  void release(void* pointer) override { cuda_memory::release(pointer); }
  void copy(void* to, const void* from, std::size_t bytes) override { cuda_memory::copy(to, from, bytes); }
};

CudaDeviceMemory g_memory;
const bool g_installed = (trainrun::test::device_memory() = &g_memory, true);

}  // namespace
