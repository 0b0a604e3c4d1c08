#include "integrations/torch_distributed/trainrun_work.h"

#include <ATen/core/jit_type.h>

#include <exception>
#include <stdexcept>
#include <utility>

namespace trainrun::c10d {

TrainrunWork::TrainrunWork(int rank, ::c10d::OpType type, std::vector<at::Tensor> outputs)
    : Work(rank, type), outputs_(std::move(outputs)),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {}

std::vector<at::Tensor> TrainrunWork::result() { return outputs_; }

c10::intrusive_ptr<c10::ivalue::Future> TrainrunWork::getFuture() { return future_; }

// Work::wait() with a timeout: a RuntimeError when it passes (torch's Gloo
// says the same), the op's own error when it failed.
void TrainrunWork::run_on_wait(const std::shared_ptr<OrderedWorker>& worker, std::uint64_t ticket) {
  worker_ = worker;
  ticket_ = ticket;
}

bool TrainrunWork::wait(std::chrono::milliseconds timeout) {
  std::shared_ptr<OrderedWorker> worker = worker_.lock();
  if (worker && timeout == kNoTimeout) worker->run_if_next(ticket_);
  std::unique_lock<std::mutex> lock(mutex_);
  if (timeout == kNoTimeout) {
    cv_.wait(lock, [&] { return completed_; });
  } else if (!cv_.wait_for(lock, timeout, [&] { return completed_; })) {
    throw std::runtime_error("trainrun: wait timed out after " + std::to_string(timeout.count()) +
                             " ms (the collective still runs)");
  }
  lock.unlock();
  // The worker lets go of the op's tensors before the caller goes on
  // (OrderedWorker::wait_settled): never its drop the last, at exit.
  if (worker) worker->wait_settled(ticket_);
  if (exception_) std::rethrow_exception(exception_);
  return true;
}

void TrainrunWork::complete(const std::string& error) {
  if (error.empty()) {
    finish();
    future_->markCompleted(c10::IValue(outputs_));
  } else {
    std::exception_ptr e = std::make_exception_ptr(std::runtime_error(error));
    finish(e);
    future_->setError(e);
  }
}

}  // namespace trainrun::c10d
