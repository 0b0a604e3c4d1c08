#include "integrations/torch_distributed/stream_order.h"

#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include <chrono>
#include <thread>

namespace trainrun::c10d {
namespace {

void wait_for(const c10::Event& event) {
  for (int round = 0; !event.query(); ++round) {
    if (round < 1000) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
}

}  // namespace

StreamOrder::StreamOrder(c10::Device device) : device_(device), ready_(device.type()) {}

std::shared_ptr<const StreamOrder> StreamOrder::mark(const std::vector<at::Tensor>& tensors) {
  for (const at::Tensor& t : tensors) {
    if (!t.defined() || !t.is_cuda()) continue;
    auto order = std::make_shared<StreamOrder>(t.device());
    c10::impl::VirtualGuardImpl impl(t.device().type());
    order->ready_.record(impl.getStream(t.device()));
    return order;
  }
  return nullptr;
}

void StreamOrder::run(const std::function<void()>& op) const {
  wait_for(ready_);
  c10::impl::VirtualGuardImpl impl(device_.type());
  const c10::Stream stream = impl.getDefaultStream(device_);
  {
    c10::StreamGuard on_default(stream);
    op();
  }
  c10::Event done(device_.type());
  done.record(stream);
  wait_for(done);
}

std::string mixed_devices(const std::vector<at::Tensor>& tensors) {
  const at::Tensor* first = nullptr;
  for (const at::Tensor& t : tensors) {
    if (!t.defined()) continue;
    if (!first) first = &t;
    if (t.device() != first->device()) return first->device().str() + " and " + t.device().str();
  }
  return "";
}

}  // namespace trainrun::c10d
