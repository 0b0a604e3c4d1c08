// ProcessGroupTrainrun: trainrun's collectives as a torch.distributed
// backend (c10d::ProcessGroup in torch 1.13, c10d::Backend in torch 2.x:
// torch_compat.h), registered under the name "trainrun" by
// trainrun.torch.distributed (docs/design.md §11). CPU and CUDA tensors:
// the core routes CUDA buffers (NCCL, or staged through host memory), and
// StreamOrder (stream_order.h) keeps torch's stream semantics.
// Point-to-point ops do not take that queue (a receive that waits would
// hold up every collective behind it): each (direction, peer, tag) has a
// worker of its own, so sends and receives run beside the collectives and
// each other, in posting order per pair and tag.
// Every op is checked on the caller's thread (a RuntimeError naming the
// rank, its host and the op), then queued to the group's OrderedWorker,
// which runs it on the core (integrations/python/core/core_group.h) in submission order,
// the same order on every rank; the caller gets a TrainrunWork at once.
// Ops the core lacks are composed from its calls (composed_collectives.h).
// Every op, collective or point-to-point, runs under the group's timeout
// (OpTimeout, op_timeout.h): past it the group is aborted and the op fails.
// Thread-safe as torch requires: ops may come from any thread (DDP's
// autograd threads); their order is the order they reach the queue.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <tuple>
#include <memory>
#include <string>
#include <vector>

#include "integrations/python/core/core_group.h"
#include "integrations/torch_distributed/op_timeout.h"
#include "integrations/torch_distributed/ordered_worker.h"
#include "integrations/torch_distributed/torch_compat.h"

namespace trainrun::c10d {

class TrainrunWork;

class ProcessGroupTrainrun : public BackendBase {
 public:
  // Over the job's world (`group` not owned) or a set (owned); every op
  // bounded by `timeout` (torch's, from init_process_group or new_group).
  ProcessGroupTrainrun(python::CoreGroup& group, std::unique_ptr<python::CoreGroup> owned,
                       std::chrono::milliseconds timeout);
  ~ProcessGroupTrainrun() override;

  const std::string getBackendName() const override { return "trainrun"; }

  // Runs `fn` on the worker, after every op queued before, and waits for it
  // (new_group: Communicator::subset is collective over this group).
  void run_ordered(const std::function<void(python::CoreGroup&)>& fn);
  // The heap this group's allreduce reads in place (heap_allocator.h), or null.
  std::shared_ptr<detail::HostMemory> host_memory() const { return group_.host_memory(); }

  using Tensors = std::vector<at::Tensor>;
  using WorkPtr = c10::intrusive_ptr<::c10d::Work>;
  WorkPtr broadcast(Tensors& tensors, const ::c10d::BroadcastOptions& opts) override;
  WorkPtr allreduce(Tensors& tensors, const ::c10d::AllreduceOptions& opts) override;
  WorkPtr allreduce_coalesced(Tensors& tensors, const ::c10d::AllreduceCoalescedOptions& opts) override;
  WorkPtr reduce(Tensors& tensors, const ::c10d::ReduceOptions& opts) override;
  WorkPtr allgather(std::vector<Tensors>& outputs, Tensors& inputs, const ::c10d::AllgatherOptions& opts) override;
  WorkPtr _allgather_base(at::Tensor& output, at::Tensor& input, const ::c10d::AllgatherOptions& opts) override;
  WorkPtr allgather_coalesced(std::vector<Tensors>& outputs, Tensors& inputs,
                              const ::c10d::AllgatherOptions& opts) override;
  WorkPtr gather(std::vector<Tensors>& outputs, Tensors& inputs, const ::c10d::GatherOptions& opts) override;
  WorkPtr scatter(Tensors& outputs, std::vector<Tensors>& inputs, const ::c10d::ScatterOptions& opts) override;
  WorkPtr reduce_scatter(Tensors& outputs, std::vector<Tensors>& inputs,
                         const ::c10d::ReduceScatterOptions& opts) override;
  WorkPtr _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                               const ::c10d::ReduceScatterOptions& opts) override;
  WorkPtr alltoall_base(at::Tensor& output, at::Tensor& input, std::vector<int64_t>& output_splits,
                        std::vector<int64_t>& input_splits, const ::c10d::AllToAllOptions& opts) override;
  WorkPtr alltoall(Tensors& outputs, Tensors& inputs, const ::c10d::AllToAllOptions& opts) override;
  WorkPtr barrier(const ::c10d::BarrierOptions& opts) override;
  WorkPtr send(Tensors& tensors, int dst, int tag) override;
  WorkPtr recv(Tensors& tensors, int src, int tag) override;
  WorkPtr recvAnysource(Tensors& tensors, int tag) override;

 private:
  // What completes `work` when an op ends: core errors already name the
  // rank, its host and the core op; others get "rank R (HOST): op: ".
  static OrderedWorker::Done completion(c10::intrusive_ptr<TrainrunWork> work, const char* op, std::string who);
  // Queues `run` under `op`'s name; the Work's result is `outputs`. The op's
  // tensors (`outputs` and `inputs`) must share one device; on CUDA, `run`
  // keeps the caller's stream order (StreamOrder).
  WorkPtr enqueue(::c10d::OpType type, const char* op, Tensors outputs, std::function<void(python::CoreGroup&)> run,
                  const Tensors& inputs = {});
  // A RuntimeError "rank R (HOST): op: why" on the caller's thread.
  [[noreturn]] void refuse(const char* op, const std::string& why) const;
  // The one tensor of `tensors`, checked (CPU or CUDA, dense, a type the core has).
  at::Tensor& single(const char* op, Tensors& tensors) const;
  void check_tensor(const char* op, const at::Tensor& t) const;
  // check_tensor without the layout: defined, CPU or CUDA, a core type.
  void check_placement(const char* op, const at::Tensor& t) const;
  // allreduce of one sparse COO tensor (SUM alone, as Gloo): sparse_allreduce.h.
  WorkPtr allreduce_sparse(at::Tensor& t, const ::c10d::AllreduceOptions& opts);
  // `t` (`what`: "the output tensor") can take an element of its own in
  // each position: not expanded (stride 0), which the op could not fill.
  void check_writable(const char* op, const at::Tensor& t, const std::string& what) const;
  void check_root(const char* op, int64_t root) const;
  // The one list of size() tensors in `lists` (`what`: "input" or
  // "output"), checked, of `like`'s dtype (and size, with `same_size`).
  Tensors rank_list(const char* op, std::vector<Tensors>& lists, const at::Tensor& like, const char* what,
                    bool same_size) const;
  // `all` holds size() blocks of `block`'s size, of its dtype.
  void check_blocks(const char* op, const at::Tensor& block, const at::Tensor& all, const char* all_name) const;
  // rank_list on the root; elsewhere `lists` must hold no tensors.
  Tensors root_list(const char* op, std::vector<Tensors>& lists, const at::Tensor& like, const char* what,
                    int root) const;
  void check_reduce(const char* op, const at::Tensor& t, const ::c10d::ReduceOp& reduce_op) const;
  // Point-to-point (process_group_p2p.cc): `t` checked, `peer` a rank of
  // this group but this one (or -1 for recv: any source).
  WorkPtr point_to_point(bool sending, const char* op, Tensors& tensors, int peer, int tag);
  // The worker that runs this group's sends (or receives) for (peer, tag),
  // in the order they were posted, beside the collectives' worker.
  std::shared_ptr<OrderedWorker> p2p_worker(bool sending, int peer, int tag);

  python::CoreGroup& group_;
  std::unique_ptr<python::CoreGroup> owned_;
  std::string who_;       // "rank R (HOST)", the job's rank, for messages
  OpTimeout op_timeout_;  // before the workers, whose tasks use it
  std::mutex p2p_mutex_;
  std::map<std::tuple<bool, int, int>, std::shared_ptr<OrderedWorker>> p2p_workers_;  // (sending, peer, tag)
  // Last: stops (running what was queued) before the group goes; the
  // destructor joins it without the GIL, which finished tasks need to drop
  // tensors that Python saw. Shared with the Works, whose wait() may run
  // their task (OrderedWorker::run_if_next).
  std::shared_ptr<OrderedWorker> worker_ = std::make_shared<OrderedWorker>();
};

}  // namespace trainrun::c10d
