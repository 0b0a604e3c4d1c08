// TrainrunWork: what a collective of the trainrun c10d backend returns at
// once (torch's c10d::Work, Work.hpp's completion contract): wait(),
// isCompleted(), isSuccess(), exception(), result() and getFuture(), whose
// value is the op's output tensors, as DDP's communication hooks expect.
// complete() is called once, from whichever thread ran the op (the group's
// worker, or a caller waiting for it); the rest from any thread.
#pragma once

#include <ATen/core/ivalue.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "integrations/torch_distributed/ordered_worker.h"

namespace trainrun::c10d {

class TrainrunWork : public ::c10d::Work {
 public:
  TrainrunWork(int rank, ::c10d::OpType type, std::vector<at::Tensor> outputs);

  std::vector<at::Tensor> result() override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  bool wait(std::chrono::milliseconds timeout) override;

  // Marks the work done: success when `error` is empty, else a
  // RuntimeError carrying `error` from wait() and from the future.
  void complete(const std::string& error);
  // wait() without a timeout first offers to run the work's task, `ticket`
  // of `worker`, on the waiting thread (OrderedWorker::run_if_next).
  void run_on_wait(const std::shared_ptr<OrderedWorker>& worker, std::uint64_t ticket);
  // A receive's sender (group rank), set before complete().
  void set_source(int rank) { source_ = rank; }
  int sourceRank() const override { return source_; }

 private:
  std::weak_ptr<OrderedWorker> worker_;
  std::uint64_t ticket_ = 0;
  std::atomic<int> source_{-1};
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

}  // namespace trainrun::c10d
