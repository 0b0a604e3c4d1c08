// ProcessGroupTrainrun's point-to-point ops (send, recv, recvAnysource) on
// the core's Communicator::send / recv (process_group.h).
#include <string>
#include <utility>

#include "integrations/torch_distributed/core_types.h"
#include "integrations/torch_distributed/process_group.h"
#include "integrations/torch_distributed/trainrun_work.h"

namespace trainrun::c10d {

using ::c10d::OpType;
using python::CoreGroup;

std::shared_ptr<OrderedWorker> ProcessGroupTrainrun::p2p_worker(bool sending, int peer, int tag) {
  std::lock_guard lock(p2p_mutex_);
  auto& worker = p2p_workers_[{sending, peer, tag}];
  if (!worker) worker = std::make_shared<OrderedWorker>();
  return worker;
}

ProcessGroupTrainrun::WorkPtr ProcessGroupTrainrun::point_to_point(bool sending, const char* op, Tensors& tensors,
                                                                   int peer, int tag) {
  at::Tensor t = single(op, tensors);
  if (t.is_cuda()) refuse(op, "CUDA tensors are not supported by backend trainrun's point-to-point (copy to the CPU)");
  if (!sending) check_writable(op, t, "the output tensor");
  if (peer != -1 && (peer < 0 || peer >= size_)) {
    refuse(op, "rank " + std::to_string(peer) + " is not a rank of this " + std::to_string(size_) + "-rank group");
  }
  if (peer == rank_) refuse(op, std::string("rank ") + std::to_string(peer) + " is this rank");
  auto work = c10::make_intrusive<TrainrunWork>(
      rank_, sending ? OpType::SEND : (peer == -1 ? OpType::RECVANYSOURCE : OpType::RECV), tensors);
  const DataType type = *core_type(t.scalar_type());
  const auto worker = p2p_worker(sending, peer, tag);
  TrainrunWork* raw = work.get();
  const std::uint64_t ticket = worker->submit(
      [this, op, t, type, peer, tag, sending, raw]() mutable {
        const std::size_t count = static_cast<std::size_t>(t.numel());
        at::Tensor dense = t.contiguous();
        op_timeout_.run(op, [&] {
          if (sending) return group_.send(dense.data_ptr(), count, type, peer, tag);
          raw->set_source(group_.recv(dense.data_ptr(), count, type, peer, tag));
        });
        if (!sending && !dense.is_same(t)) t.copy_(dense);
      },
      completion(work, op, who_));
  work->run_on_wait(worker, ticket);
  return work;
}

ProcessGroupTrainrun::WorkPtr ProcessGroupTrainrun::send(Tensors& tensors, int dst, int tag) {
  return point_to_point(true, "send", tensors, dst, tag);
}

ProcessGroupTrainrun::WorkPtr ProcessGroupTrainrun::recv(Tensors& tensors, int src, int tag) {
  if (src == -1) refuse("recv", "rank -1 is not a rank of this group");
  return point_to_point(false, "recv", tensors, src, tag);
}

ProcessGroupTrainrun::WorkPtr ProcessGroupTrainrun::recvAnysource(Tensors& tensors, int tag) {
  return point_to_point(false, "recv", tensors, -1, tag);
}

}  // namespace trainrun::c10d
