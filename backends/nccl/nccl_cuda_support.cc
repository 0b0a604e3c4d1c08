#include "backends/nccl/nccl_cuda_support.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "backends/nccl/cuda_device.h"
#include "backends/nccl/fusion_copy.h"
#include "backends/nccl/nccl_backend.h"
#include "backends/nccl/nccl_library.h"
#include "backends/nccl/shared_library.h"
#include "contract/kv_keys.h"
#include "rendezvous/store.h"
#include "trainrun/error.h"

namespace trainrun::detail {
namespace {

constexpr std::string_view kReady = "ok";
constexpr std::string_view kNotReady = "no ";
// Staging grows by half again at least, so a sweep of growing sizes
// reallocates a few times, not at every size.
constexpr std::size_t kMinAllocation = 1 << 20;

CUdeviceptr device_pointer(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

bool is_cuda(CUmemorytype type) { return type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_UNIFIED; }

// Why this rank cannot run NCCL ("" when it can); rank 0 also makes the id.
std::string probe(const World& world, const NcclLibrary*& nccl, const CudaDriver*& driver, int& device,
                  ncclUniqueId& id) {
  try {
    driver = &CudaDriver::load();
    driver->check(driver->cuInit(0), "cuInit");
    int visible = 0;
    driver->check(driver->cuDeviceGetCount(&visible), "cuDeviceGetCount");
    device = choose_cuda_device(world, visible);
    nccl = &NcclLibrary::load();
    if (world.rank == 0) {
      const ncclResult_t result = nccl->ncclGetUniqueId(&id);
      if (result != ncclSuccess) throw nccl->error(result, "ncclGetUniqueId", nullptr);
    }
    return "";
  } catch (const Error& e) {
    return world.hostname + ": " + e.what();
  }
}

}  // namespace

NcclCudaSupport::~NcclCudaSupport() {
  release(staging_);
  release(scratch_);
  release(fusion_);
  if (driver_) unload_copy_kernel();
  if (own_stream_) {
    try {
      ScopedCudaContext scope(*driver_, own_stream_context_);
      driver_->cuStreamDestroy(own_stream_);
    } catch (const Error&) {
      // the driver is shutting down with the process
    }
  }
}

bool NcclCudaSupport::driver_loaded() {
  if (driver_) return true;
  // Asking the loader whether the driver is in costs ~20 us: ask again only
  // after some library was loaded.
  const unsigned long long loads = SharedLibrary::loads_so_far();
  if (loads == loads_checked_) return false;
  loads_checked_ = loads;
  if (CudaDriver::in_process()) driver_ = &CudaDriver::load();
  return driver_ != nullptr;
}

BufferInfo NcclCudaSupport::inspect(const void* pointer) {
  if (!pointer || !driver_loaded()) return {};
  // Needs no current context. Before cuInit, or for memory CUDA does not
  // know, the query fails or reports no type: host memory either way.
  CUmemorytype type{};
  int device = -1;
  CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
  void* values[] = {&type, &device};
  if (driver_->cuPointerGetAttributes(2, attributes, values, device_pointer(pointer)) != CUDA_SUCCESS ||
      !is_cuda(type)) {
    return {};
  }
  return {true, device};
}

CUcontext NcclCudaSupport::context_of(const void* a, const void* b) {
  for (const void* p : {a, b}) {
    CUmemorytype type{};
    CUcontext context = nullptr;
    CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_CONTEXT};
    void* values[] = {&type, &context};
    if (p && driver_->cuPointerGetAttributes(2, attributes, values, device_pointer(p)) == CUDA_SUCCESS &&
        is_cuda(type) && context) {
      return context;
    }
  }
  throw Error(Error::Code::Internal, "no CUDA context owns the buffers of a CUDA copy");
}

void NcclCudaSupport::copy(void* to, const void* from, std::size_t bytes) {
  if (bytes == 0 || to == from) return;
  ScopedCudaContext scope(*driver_, context_of(from, to));
  // cuMemcpy runs on the legacy default stream: ordered after work queued
  // there, and done when it returns (host memory here is pinned).
  driver_->check(driver_->cuMemcpy(device_pointer(to), device_pointer(from), bytes), "cuMemcpy");
}

void* NcclCudaSupport::staging(std::size_t bytes, const void* device_buffer) {
  return reserve(staging_, bytes, device_buffer, true);
}

void* NcclCudaSupport::device_scratch(std::size_t bytes, const void* device_buffer) {
  return reserve(scratch_, bytes, device_buffer, false);
}

void* NcclCudaSupport::fusion_buffer(std::size_t bytes, const void* device_buffer) {
  if (fusion_.pointer && fusion_.bytes < bytes) {
    // Copies and a collective queued on the old buffer may still run.
    ScopedCudaContext scope(*driver_, fusion_.context);
    driver_->check(driver_->cuCtxSynchronize(), "cuCtxSynchronize");
  }
  return reserve(fusion_, bytes, device_buffer, false);
}

CUstream NcclCudaSupport::copy_stream(CUcontext context) {
  if (nccl_stream_) return nccl_stream_;
  if (own_stream_ && own_stream_context_ != context) {
    ScopedCudaContext scope(*driver_, own_stream_context_);
    driver_->cuStreamDestroy(own_stream_);  // its work still runs to the end
    own_stream_ = nullptr;
  }
  if (!own_stream_) {
    // Blocking: it starts after the legacy stream's earlier work, and the
    // legacy stream's later work (the staged cuMemcpy) waits for it.
    driver_->check(driver_->cuStreamCreate(&own_stream_, CU_STREAM_DEFAULT), "cuStreamCreate");
    own_stream_context_ = context;
  }
  return own_stream_;
}

CUfunction NcclCudaSupport::copy_kernel(CUcontext context) {
  if (kernel_.context == context) return kernel_.function;
  unload_copy_kernel();
  kernel_.context = context;
  if (kFusionCopyPtx[0] == '\0') return nullptr;
  // A driver too old for the PTX, or a JIT failure: copies one by one.
  if (driver_->cuModuleLoadData(&kernel_.module, kFusionCopyPtx) != CUDA_SUCCESS) {
    kernel_.module = nullptr;
  } else if (driver_->cuModuleGetFunction(&kernel_.function, kernel_.module, kFusionCopyKernel) != CUDA_SUCCESS) {
    kernel_.function = nullptr;
  }
  return kernel_.function;
}

void NcclCudaSupport::unload_copy_kernel() noexcept {
  if (kernel_.module) {
    try {
      ScopedCudaContext scope(*driver_, kernel_.context);
      driver_->cuModuleUnload(kernel_.module);
    } catch (const Error&) {
      // the driver is shutting down with the process
    }
  }
  kernel_ = {};
}

void NcclCudaSupport::enqueue_copies(const std::vector<DeviceCopy>& copies) {
  std::vector<FusionCopyEntry> entries;
  for (const DeviceCopy& c : copies) {
    if (c.bytes > 0) entries.push_back({device_pointer(c.to), device_pointer(c.from), c.bytes});
  }
  if (entries.empty()) return;
  const CUcontext context = context_of(copies[0].to, copies[0].from);
  ScopedCudaContext scope(*driver_, context);
  const CUstream stream = copy_stream(context);
  const CUfunction kernel = copy_kernel(context);
  if (!kernel) {
    for (const FusionCopyEntry& e : entries) {
      driver_->check(driver_->cuMemcpyDtoDAsync(e.to, e.from, e.bytes, stream), "cuMemcpyDtoDAsync");
    }
    return;
  }
  for (std::size_t first = 0; first < entries.size(); first += kFusionCopyTableSize) {
    FusionCopyTable table{};
    table.count = static_cast<int>(std::min<std::size_t>(kFusionCopyTableSize, entries.size() - first));
    unsigned long long largest = 0;
    for (int i = 0; i < table.count; ++i) {
      table.entries[i] = entries[first + i];
      largest = std::max(largest, table.entries[i].bytes);
    }
    const unsigned blocks = fusion_copy_blocks(largest);
    void* parameters[] = {&table};
    driver_->check(driver_->cuLaunchKernel(kernel, blocks, static_cast<unsigned>(table.count), 1, kFusionCopyThreads, 1,
                                           1, 0, stream, parameters, nullptr),
                   "cuLaunchKernel (fusion copies)");
  }
}

void* NcclCudaSupport::reserve(Allocation& allocation, std::size_t bytes, const void* device_buffer, bool pinned) {
  const CUcontext context = context_of(device_buffer);
  // Pinned memory is portable, good in every context; device memory is not.
  if (allocation.pointer && allocation.bytes >= bytes && (pinned || allocation.context == context)) {
    return allocation.pointer;
  }
  release(allocation);
  const std::size_t size = std::max({bytes, allocation.bytes + allocation.bytes / 2, kMinAllocation});
  ScopedCudaContext scope(*driver_, context);
  if (pinned) {
    driver_->check(driver_->cuMemHostAlloc(&allocation.pointer, size, CU_MEMHOSTALLOC_PORTABLE), "cuMemHostAlloc");
  } else {
    CUdeviceptr memory = 0;
    driver_->check(driver_->cuMemAlloc(&memory, size), "cuMemAlloc");
    allocation.pointer = reinterpret_cast<void*>(memory);
  }
  allocation.bytes = size;
  allocation.context = context;
  allocation.pinned = pinned;
  return allocation.pointer;
}

void NcclCudaSupport::release(Allocation& allocation) noexcept {
  if (!allocation.pointer) return;
  try {
    ScopedCudaContext scope(*driver_, allocation.context);
    if (allocation.pinned) {
      driver_->cuMemFreeHost(allocation.pointer);
    } else {
      driver_->cuMemFree(device_pointer(allocation.pointer));
    }
  } catch (const Error&) {
    // the driver is shutting down with the process: nothing left to free
  }
  allocation.pointer = nullptr;  // bytes stays: the next size grows from it
}

CudaSupport::Nccl NcclCudaSupport::open_nccl(const BackendContext& context, Backend& host, CudaPolicy policy) {
  if (policy == CudaPolicy::Staged) return {};
  const World& world = context.world;
  const NcclLibrary* nccl = nullptr;
  const CudaDriver* driver = nullptr;
  int device = -1;
  ncclUniqueId id{};
  const std::string problem = probe(world, nccl, driver, device, id);
  std::string mine = problem.empty() ? std::string(kReady) : std::string(kNotReady) + problem;
  if (problem.empty() && world.rank == 0) mine.append(id.internal, sizeof id.internal);

  const std::vector<std::string> said = exchange_nccl_readiness(context, host, mine);
  std::vector<std::string> problems(said.size());
  for (std::size_t r = 0; r < said.size(); ++r) {
    const std::string_view record = said[r];
    if (record.substr(0, kNotReady.size()) == kNotReady) {
      problems[r] = record.substr(kNotReady.size());
    } else if (record.substr(0, kReady.size()) != kReady) {
      problems[r] = "sent a malformed NCCL start-up record";
    }
  }
  if (decide_cuda_path(policy, problems) == CudaPath::Staged) return {};
  if (said[0].size() != kReady.size() + sizeof id.internal) {
    throw Error(Error::Code::Internal, "rank 0 published a malformed ncclUniqueId");
  }
  std::memcpy(id.internal, said[0].data() + kReady.size(), sizeof id.internal);
  auto backend = std::make_unique<NcclBackend>(world, *nccl, *driver, device, id);
  nccl_stream_ = backend->stream();
  return {std::move(backend), device};
}

std::vector<std::string> exchange_nccl_readiness(const BackendContext& context, Backend& host,
                                                 const std::string& mine) {
  const World& world = context.world;
  if (context.store) {
    const std::string scope =
        std::string(contract::kScopeNcclPrefix) + std::to_string(context.generation) + context.set;
    context.store->set(scope, std::string(contract::kKeyNcclReadyPrefix) + std::to_string(world.rank), mine);
    // A rank reaches its first CUDA collective when its program does: as
    // patient as a collective, not as start-up.
    return context.store->get_range(scope, contract::kKeyNcclReadyPrefix, 0, static_cast<std::uint64_t>(world.size),
                                    world.nccl_timeout);
  }
  // No rendezvous (under mpirun, or a single process): the CPU backend carries it.
  const std::int64_t length = static_cast<std::int64_t>(mine.size());
  std::vector<std::int64_t> lengths(static_cast<std::size_t>(world.size));
  host.allgather(&length, lengths.data(), 1, DataType::Int64);
  const std::vector<std::size_t> counts(lengths.begin(), lengths.end());
  std::string all(std::accumulate(counts.begin(), counts.end(), std::size_t{0}), '\0');
  host.allgatherv(mine.data(), all.data(), counts, DataType::UInt8);
  std::vector<std::string> out;
  std::size_t offset = 0;
  for (std::size_t count : counts) {
    out.push_back(all.substr(offset, count));
    offset += count;
  }
  return out;
}

std::string describe_nccl() {
  std::string text;
  try {
    text = NcclLibrary::load().describe();
  } catch (const Error& e) {
    return std::string("not usable here: ") + e.what();
  }
  try {
    const CudaDriver& driver = CudaDriver::load();
    driver.check(driver.cuInit(0), "cuInit");
    int visible = 0;
    driver.check(driver.cuDeviceGetCount(&visible), "cuDeviceGetCount");
    return text + ", CUDA driver " + driver.version() + ", " + std::to_string(visible) + " GPU" +
           (visible == 1 ? "" : "s");
  } catch (const Error& e) {
    return text + "; cannot run here: " + e.what();
  }
}

}  // namespace trainrun::detail
