#include "integrations/torch_distributed/torch_store.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <utility>
#include <vector>

namespace trainrun::c10d {
namespace {

class TorchStore final : public python::ForeignStore {
 public:
  explicit TorchStore(c10::intrusive_ptr<::c10d::Store> store) : store_(std::move(store)) {}

  void set(const std::string& key, const std::string& value) override {
    store_->set(key, std::vector<std::uint8_t>(value.begin(), value.end()));
  }
  std::optional<std::string> get(const std::string& key, std::chrono::milliseconds timeout) override {
    try {
      store_->wait({key}, timeout);
    } catch (const c10::Error&) {
      if (!store_->check({key})) return std::nullopt;  // timed out; a broken store throws here
    }
    const std::vector<std::uint8_t> value = store_->get(key);
    return std::string(value.begin(), value.end());
  }
  std::int64_t add(const std::string& key, std::int64_t delta) override { return store_->add(key, delta); }

 private:
  c10::intrusive_ptr<::c10d::Store> store_;
};

}  // namespace

std::shared_ptr<python::ForeignStore> foreign_store(c10::intrusive_ptr<::c10d::Store> store) {
  return std::make_shared<TorchStore>(std::move(store));
}

std::string store_host(const c10::intrusive_ptr<::c10d::Store>& store) {
  c10::intrusive_ptr<::c10d::Store> s = store;
  while (auto* prefixed = dynamic_cast<::c10d::PrefixStore*>(s.get())) s = prefixed->getUnderlyingStore();
  const auto* tcp = dynamic_cast<const ::c10d::TCPStore*>(s.get());
  return tcp ? tcp->getHost() : "";
}

}  // namespace trainrun::c10d
