#include "lib/engine/executor.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "backends/reduction.h"
#include "os/net.h"

namespace trainrun::detail {
namespace {

std::size_t elements(const std::vector<std::int64_t>& shape, std::size_t from_dim = 0) {
  std::size_t n = 1;
  for (std::size_t d = from_dim; d < shape.size(); ++d) n *= static_cast<std::size_t>(shape[d]);
  return n;
}

std::vector<std::int64_t> with_rows(std::int64_t rows, const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> out = shape;
  out[0] = rows;
  return out;
}

}  // namespace

Executor::Executor(Backend& backend, int rank, int size, std::size_t fusion_threshold, Timeline& timeline)
    : backend_(backend), rank_(rank), size_(size), fusion_threshold_(fusion_threshold), timeline_(timeline),
      backend_name_(upper_case(backend.name())) {}

Executor::~Executor() {
  if (buffer_ && from_heap_) backend_.host_memory()->free(buffer_);
  else if (buffer_) ::munmap(buffer_, capacity_);
}

std::string Executor::label(OpType op) const { return backend_name_ + "_" + upper_case(to_string(op)); }

char* Executor::scratch(std::size_t bytes) {
  if (!buffer_ && fusion_threshold_ > 0 && bytes <= fusion_threshold_) {
    // From the backend's heap where it has one: the host's ranks then
    // reduce fused batches where they lie (backends/host_memory.h).
    if (std::shared_ptr<HostMemory> heap = backend_.host_memory()) buffer_ = heap->allocate(fusion_threshold_);
    from_heap_ = buffer_ != nullptr;
    capacity_ = from_heap_ ? fusion_threshold_ : 0;
  }
  if (!buffer_ && fusion_threshold_ > 0 && bytes <= fusion_threshold_) {
    // Mapped once at the threshold: pages are only touched as batches use them.
    void* p =
        ::mmap(nullptr, fusion_threshold_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      throw Error(Error::Code::Internal, "engine: cannot map a " + std::to_string(fusion_threshold_) +
                                             "-byte fusion buffer: " + net::errno_text(errno));
    }
    ::madvise(p, fusion_threshold_, MADV_HUGEPAGE);
    buffer_ = p;
    capacity_ = fusion_threshold_;
  }
  if (bytes <= capacity_) return static_cast<char*>(buffer_);
  if (spare_.size() < bytes) spare_.resize(bytes);
  return spare_.data();
}

void Executor::run(const Batch& batch, const std::vector<Response>& responses, const std::vector<Work*>& works) {
  const Request& r = responses[batch.items[0].response].request;
  std::vector<std::string> names;
  for (const FusionItem& item : batch.items) {
    const Request& ri = responses[item.response].request;
    names.push_back(ri.members.empty() ? ri.name : ri.members[item.member].name);
    if (timeline_.active()) timeline_.end(names.back(), "QUEUE");
  }
  Work* work = works[0];
  const std::string span = label(r.op);
  const bool traced = timeline_.active() && r.op != OpType::Allreduce && r.op != OpType::Join;
  if (traced) timeline_.begin(names[0], span);
  switch (r.op) {
    case OpType::Allreduce:
      if (batch.fused) allreduce_fused(batch, r, works, names);
      else allreduce_alone(batch.items[0], r, work, names[0]);
      break;
    case OpType::Allgather: allgather(r, work); break;
    case OpType::Broadcast:
      backend_.broadcast(work ? work->data[0] : scratch(r.bytes()), r.count(), r.type, r.root);
      break;
    case OpType::Alltoall: alltoall(r, *work); break;  // never runs with a joined rank
    case OpType::Reducescatter: reducescatter(r, work); break;
    case OpType::Barrier: backend_.barrier(); break;
    case OpType::Core: work->core(); break;
    case OpType::Join: break;  // completes in the engine
  }
  if (traced) timeline_.end(names[0], span);
}

template <typename Fn>
void Executor::traced(const std::vector<std::string>& names, const std::string& phase, Fn&& fn) {
  for (const auto& name : names) {
    if (timeline_.active()) timeline_.begin(name, phase);
  }
  fn();
  for (const auto& name : names) {
    if (timeline_.active()) timeline_.end(name, phase);
  }
}

void Executor::allreduce_fused(const Batch& batch, const Request& r, const std::vector<Work*>& works,
                               const std::vector<std::string>& names) {
  if (r.on_cuda()) return allreduce_fused_on_device(batch, r, works, names);
  char* buffer = scratch(batch.bytes);
  const std::size_t element = size_of(r.type);
  auto each = [&](const char* phase, auto&& fn) {
    for (std::size_t i = 0; i < batch.items.size(); ++i) {
      if (timeline_.active()) timeline_.begin(names[i], phase);
      fn(batch.items[i], works[i]);
      if (timeline_.active()) timeline_.end(names[i], phase);
    }
  };
  each("MEMCPY_IN_FUSION_BUFFER", [&](const FusionItem& item, Work* w) {
    char* at = buffer + item.offset;
    if (!w) return fill_identity(at, item.bytes / element, r.type, r.reduce_op);
    std::memcpy(at, w->data[item.member], item.bytes);
    scale_in_place(at, item.bytes / element, r.type, r.prescale);
  });
  traced(names, label(OpType::Allreduce),
         [&] { backend_.allreduce(buffer, buffer, batch.bytes / element, r.type, r.reduce_op); });
  each("MEMCPY_OUT_FUSION_BUFFER", [&](const FusionItem& item, Work* w) {
    if (!w) return;
    char* at = buffer + item.offset;
    scale_in_place(at, item.bytes / element, r.type, r.postscale);
    std::memcpy(w->data[item.member], at, item.bytes);
  });
}

void Executor::allreduce_fused_on_device(const Batch& batch, const Request& r, const std::vector<Work*>& works,
                                         const std::vector<std::string>& names) {
  // Requests on CUDA memory are never scaled and never joined (engine_api,
  // Coordinator), so the batch is copies and one reduction.
  for (const Work* w : works) {
    if (!w) throw Error(Error::Code::Internal, "engine: a joined rank in a fused CUDA batch");
  }
  DeviceFusion* fusion = backend_.device_fusion();
  if (!fusion) {  // a build without CUDA: the backend takes the tensors one by one, as it can
    for (std::size_t i = 0; i < batch.items.size(); ++i) allreduce_alone(batch.items[i], r, works[i], names[i]);
    return;
  }
  const void* first = works[0]->data[batch.items[0].member];
  char* buffer = static_cast<char*>(fusion->fusion_buffer(batch.bytes, first));
  std::vector<DeviceCopy> in, out;
  for (std::size_t i = 0; i < batch.items.size(); ++i) {
    const FusionItem& item = batch.items[i];
    void* tensor = works[i]->data[item.member];
    in.push_back({buffer + item.offset, tensor, item.bytes});
    out.push_back({tensor, buffer + item.offset, item.bytes});
  }
  traced(names, "MEMCPY_IN_FUSION_BUFFER", [&] { fusion->enqueue_copies(in); });
  traced(names, label(OpType::Allreduce),
         [&] { backend_.allreduce(buffer, buffer, batch.bytes / size_of(r.type), r.type, r.reduce_op); });
  traced(names, "MEMCPY_OUT_FUSION_BUFFER", [&] { fusion->enqueue_copies(out); });
}

void Executor::allreduce_alone(const FusionItem& item, const Request& r, Work* work, const std::string& name) {
  const std::size_t count = item.bytes / size_of(r.type);
  void* data = work ? work->data[item.member] : scratch(item.bytes);
  if (!work) fill_identity(data, count, r.type, r.reduce_op);
  else scale_in_place(data, count, r.type, r.prescale);
  const std::string span = label(OpType::Allreduce);
  if (timeline_.active()) timeline_.begin(name, span);
  backend_.allreduce(data, data, count, r.type, r.reduce_op);
  if (timeline_.active()) timeline_.end(name, span);
  if (work) scale_in_place(data, count, r.type, r.postscale);
}

void Executor::allgather(const Request& r, Work* work) {
  // First dimensions differ by rank: share them, then gather the rows.
  std::int64_t rows = work ? work->request.shape[0] : 0;
  std::vector<std::int64_t> all_rows(static_cast<std::size_t>(size_));
  backend_.allgather(&rows, all_rows.data(), 1, DataType::Int64);
  const std::size_t row = elements(r.shape, 1);
  std::vector<std::size_t> counts;
  std::int64_t total = 0;
  for (auto n : all_rows) {
    counts.push_back(static_cast<std::size_t>(n) * row);
    total += n;
  }
  Output out{r.type, with_rows(total, r.shape), {}, {}};
  out.data.resize(static_cast<std::size_t>(total) * row * size_of(r.type));
  const char none = 0;
  backend_.allgatherv(work ? work->data[0] : &none, out.data.data(), counts, r.type);
  if (work) work->op->output = std::move(out);
}

void Executor::alltoall(const Request& r, Work& work) {
  // Every rank's splits, so that each knows how many rows it receives.
  std::vector<std::int64_t> all(static_cast<std::size_t>(size_) * size_);
  backend_.allgather(work.splits.data(), all.data(), static_cast<std::size_t>(size_), DataType::Int64);
  const std::size_t row = elements(work.request.shape, 1);
  std::vector<std::size_t> send_counts, recv_counts;
  std::vector<std::int64_t> received;
  std::int64_t total = 0;
  for (int peer = 0; peer < size_; ++peer) {
    send_counts.push_back(static_cast<std::size_t>(work.splits[peer]) * row);
    received.push_back(all[static_cast<std::size_t>(peer) * size_ + rank_]);
    recv_counts.push_back(static_cast<std::size_t>(received.back()) * row);
    total += received.back();
  }
  Output out{r.type, with_rows(total, work.request.shape), {}, std::move(received)};
  out.data.resize(static_cast<std::size_t>(total) * row * size_of(r.type));
  backend_.alltoall(work.data[0], send_counts, out.data.data(), recv_counts, r.type);
  work.op->output = std::move(out);
}

void Executor::reducescatter(const Request& r, Work* work) {
  const std::int64_t rows = r.shape[0];
  const std::size_t row = elements(r.shape, 1);
  // Rows split as evenly as possible, the first rows % size ranks one more.
  std::vector<std::size_t> counts;
  for (int peer = 0; peer < size_; ++peer) {
    counts.push_back(static_cast<std::size_t>(rows / size_ + (peer < rows % size_ ? 1 : 0)) * row);
  }
  const std::int64_t mine = rows / size_ + (rank_ < rows % size_ ? 1 : 0);
  Output out{r.type, with_rows(mine, r.shape), {}, {}};
  out.data.resize(counts[rank_] * size_of(r.type));
  const void* input = work ? work->data[0] : nullptr;
  if (!work) {
    char* neutral = scratch(r.bytes());
    fill_identity(neutral, r.count(), r.type, r.reduce_op);
    input = neutral;
  }
  backend_.reducescatter(input, out.data.data(), counts, r.type, r.reduce_op);
  if (work) work->op->output = std::move(out);
}

}  // namespace trainrun::detail
