#include "integrations/torch_distributed/process_group.h"

#include <ATen/MemoryOverlap.h>
#include <pybind11/pybind11.h>

#include <condition_variable>
#include <exception>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <utility>

#include "integrations/torch_distributed/composed_collectives.h"
#include "integrations/torch_distributed/core_types.h"
#include "integrations/torch_distributed/sparse_allreduce.h"
#include "integrations/torch_distributed/stream_order.h"
#include "integrations/torch_distributed/trainrun_work.h"

namespace trainrun::c10d {

using ::c10d::OpType;
using python::CoreGroup;

ProcessGroupTrainrun::ProcessGroupTrainrun(CoreGroup& group, std::unique_ptr<CoreGroup> owned,
                                           std::chrono::milliseconds timeout)
    : BackendBase(group.rank(), group.size()), group_(group), owned_(std::move(owned)),
      who_("rank " + std::to_string(group.job_rank(group.rank())) + " (" + group.hostname() + ")"),
      op_timeout_(timeout, who_, [this] { group_.abort(); }) {}

// Python drops the last reference with the GIL held (DDP's Reducer, torch's
// group table); the worker may need it to free the tensors of its last task.
ProcessGroupTrainrun::~ProcessGroupTrainrun() {
  if (Py_IsInitialized() && PyGILState_Check()) {
    pybind11::gil_scoped_release release;
    p2p_workers_.clear();
    worker_.reset();
  } else {
    p2p_workers_.clear();
    worker_.reset();
  }
}

void ProcessGroupTrainrun::refuse(const char* op, const std::string& why) const {
  throw std::runtime_error(who_ + ": " + op + ": " + why);
}

void ProcessGroupTrainrun::check_placement(const char* op, const at::Tensor& t) const {
  if (!t.defined()) refuse(op, "the tensor is undefined");
  if (!t.device().is_cpu() && !t.device().is_cuda()) {
    refuse(op, "tensors on " + t.device().str() + " are not supported by backend trainrun (CPU and CUDA tensors)");
  }
  if (!core_type(t.scalar_type())) {
    refuse(op, std::string("tensors of dtype ") + c10::toString(t.scalar_type()) +
                   " are not supported by backend trainrun");
  }
}

void ProcessGroupTrainrun::check_tensor(const char* op, const at::Tensor& t) const {
  check_placement(op, t);
  if (t.is_sparse()) {
    refuse(op,
           "sparse tensors are not supported by backend trainrun in this op (all_reduce with ReduceOp.SUM "
           "takes them)");
  }
  if (t.layout() != c10::kStrided) {
    refuse(op, "tensors of layout " + c10::str(t.layout()) + " are not supported by backend trainrun");
  }
}

void ProcessGroupTrainrun::check_writable(const char* op, const at::Tensor& t, const std::string& what) const {
  if (at::has_internal_overlap(t) == at::MemOverlap::Yes) {
    refuse(op, what + " is expanded (several of its elements share one memory location), so it cannot take the " +
                   "result; pass a tensor of its own (clone() it)");
  }
}

at::Tensor& ProcessGroupTrainrun::single(const char* op, Tensors& tensors) const {
  if (tensors.size() != 1) {
    refuse(op, "backend trainrun takes one tensor per call, got " + std::to_string(tensors.size()));
  }
  check_tensor(op, tensors[0]);
  return tensors[0];
}

void ProcessGroupTrainrun::check_root(const char* op, int64_t root) const {
  if (root < 0 || root >= size_) {
    refuse(op, "root " + std::to_string(root) + " is not a rank of this " + std::to_string(size_) + "-rank group");
  }
}

void ProcessGroupTrainrun::check_reduce(const char* op, const at::Tensor& t, const ::c10d::ReduceOp& r) const {
  const auto kind = reduce_kind(r.op_);
  if (kind == ReduceKind::Refused) refuse(op, std::string("ReduceOp ") + op_name(r.op_) + " is not supported");
  if (kind == ReduceKind::Bitwise && at::isFloatingType(t.scalar_type())) {
    refuse(op, std::string("ReduceOp ") + op_name(r.op_) + " needs an integer or bool tensor, not " +
                   c10::toString(t.scalar_type()));
  }
}

OrderedWorker::Done ProcessGroupTrainrun::completion(c10::intrusive_ptr<TrainrunWork> work, const char* op,
                                                     std::string who) {
  return [work = std::move(work), op, who = std::move(who)](const std::string& error) {
    work->complete(error.empty() || error.rfind("rank ", 0) == 0 ? error : who + ": " + op + ": " + error);
  };
}

ProcessGroupTrainrun::WorkPtr ProcessGroupTrainrun::enqueue(OpType type, const char* op, Tensors outputs,
                                                            std::function<void(CoreGroup&)> run,
                                                            const Tensors& inputs) {
  Tensors involved = outputs;
  involved.insert(involved.end(), inputs.begin(), inputs.end());
  const std::string mixed = mixed_devices(involved);
  if (!mixed.empty()) refuse(op, "every tensor of one op must be on one device, not on " + mixed);
  std::shared_ptr<const StreamOrder> order = StreamOrder::mark(involved);
  auto work = c10::make_intrusive<TrainrunWork>(rank_, type, std::move(outputs));
  OrderedWorker::Task task = [this, op, run = std::move(run)] { op_timeout_.run(op, [&] { run(group_); }); };
  if (order) task = [order, task = std::move(task)] { order->run(task); };
  const std::uint64_t ticket = worker_->submit(std::move(task), completion(work, op, who_));
  work->run_on_wait(worker_, ticket);
  return work;
}

void ProcessGroupTrainrun::run_ordered(const std::function<void(CoreGroup&)>& fn) {
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  std::string failure;
  worker_->submit([&] { fn(group_); },
                  [&](const std::string& error) {
                    std::lock_guard lock(mutex);
                    failure = error;
                    done = true;
                    cv.notify_one();
                  });
  std::unique_lock lock(mutex);
  cv.wait(lock, [&] { return done; });
  if (!failure.empty()) throw std::runtime_error(failure);
}

ProcessGroupTrainrun::WorkPtr ProcessGroupTrainrun::broadcast(Tensors& tensors, const ::c10d::BroadcastOptions& opts) {
  at::Tensor t = single("broadcast", tensors);
  check_root("broadcast", opts.rootRank);
  const int root = static_cast<int>(opts.rootRank);
  return enqueue(OpType::BROADCAST, "broadcast", tensors,
                 [t, root](CoreGroup& g) mutable { broadcast_tensor(g, t, root); });
}

ProcessGroupTrainrun::WorkPtr ProcessGroupTrainrun::allreduce(Tensors& tensors, const ::c10d::AllreduceOptions& opts) {
  if (tensors.size() == 1 && tensors[0].defined() && tensors[0].is_sparse()) return allreduce_sparse(tensors[0], opts);
  at::Tensor t = single("allreduce", tensors);
  check_reduce("allreduce", t, opts.reduceOp);
  const auto op = opts.reduceOp.op_;
  return enqueue(OpType::ALLREDUCE, "allreduce", tensors,
                 [t, op](CoreGroup& g) mutable { allreduce_tensor(g, t, op); });
}

ProcessGroupTrainrun::WorkPtr ProcessGroupTrainrun::allreduce_sparse(at::Tensor& t,
                                                                     const ::c10d::AllreduceOptions& opts) {
  const char* op = "allreduce";
  check_placement(op, t);
  if (t.dim() > kMaxSparseTensorDims) {
    refuse(op, "sparse tensors of more than " + std::to_string(kMaxSparseTensorDims) +
                   " dimensions are not supported by backend trainrun (this one has " + std::to_string(t.dim()) + ")");
  }
  if (opts.reduceOp.op_ != ::c10d::ReduceOp::SUM) {
    refuse(op, std::string("unsupported reduction operation ") + op_name(opts.reduceOp.op_) +
                   " (allreduce of sparse tensors only works with ReduceOp.SUM)");
  }
  return enqueue(OpType::ALLREDUCE, op, {t}, [t](CoreGroup& g) mutable { allreduce_sparse_sum(g, t); });
}

ProcessGroupTrainrun::WorkPtr ProcessGroupTrainrun::allreduce_coalesced(Tensors& tensors,
                                                                        const ::c10d::AllreduceCoalescedOptions& opts) {
  const char* op = "allreduce_coalesced";
  if (tensors.empty()) refuse(op, "no tensors");
  for (const at::Tensor& t : tensors) {
    check_tensor(op, t);
    if (t.scalar_type() != tensors[0].scalar_type()) refuse(op, "the tensors must all have one dtype");
  }
  check_reduce(op, tensors[0], opts.reduceOp);
  const auto reduce_op = opts.reduceOp.op_;
  return enqueue(OpType::ALLREDUCE_COALESCED, op, tensors,
                 [tensors, reduce_op](CoreGroup& g) mutable { allreduce_tensors(g, tensors, reduce_op); });
}

ProcessGroupTrainrun::WorkPtr ProcessGroupTrainrun::reduce(Tensors& tensors, const ::c10d::ReduceOptions& opts) {
  at::Tensor t = single("reduce", tensors);
  check_root("reduce", opts.rootRank);
  check_reduce("reduce", t, opts.reduceOp);
  const int root = static_cast<int>(opts.rootRank);
  const auto op = opts.reduceOp.op_;
  return enqueue(OpType::REDUCE, "reduce", tensors,
                 [t, root, op](CoreGroup& g) mutable { reduce_tensor(g, t, root, op); });
}

ProcessGroupTrainrun::WorkPtr ProcessGroupTrainrun::barrier(const ::c10d::BarrierOptions& /*opts*/) {
  return enqueue(OpType::BARRIER, "barrier", {}, [](CoreGroup& g) { g.barrier(); });
}

}  // namespace trainrun::c10d
