#include "lib/engine/fusion_planner.h"

#include <tuple>

namespace trainrun::detail {
namespace {

// What must be equal for two allreduces to share one backend call.
auto fusion_key(const Request& r) { return std::make_tuple(r.type, r.reduce_op, r.device, r.prescale, r.postscale); }

std::size_t member_bytes(const Request& r, std::size_t member) {
  if (r.members.empty()) return r.bytes();
  std::size_t n = size_of(r.type);
  for (auto d : r.members[member].shape) n *= static_cast<std::size_t>(d);
  return n;
}

std::size_t align(std::size_t offset) { return (offset + kFusionAlignment - 1) / kFusionAlignment * kFusionAlignment; }

}  // namespace

std::vector<Batch> plan_batches(const std::vector<Response>& responses, std::size_t threshold) {
  std::vector<Batch> batches;
  // Open fused batches, by key; sealed into `batches` when full or at the end.
  std::vector<std::pair<decltype(fusion_key(Request{})), Batch>> open;
  // A "fused" batch of one tensor needs no copies: it runs in place.
  auto seal = [&](Batch b) {
    if (b.items.size() == 1) {
      b.fused = false;
      b.bytes = b.items[0].offset = 0;
    }
    batches.push_back(std::move(b));
  };
  auto alone = [&](FusionItem item) {
    Batch b;
    b.items.push_back(item);
    batches.push_back(std::move(b));
  };
  for (std::size_t i = 0; i < responses.size(); ++i) {
    const Request& r = responses[i].request;
    if (r.op != OpType::Allreduce || !responses[i].error.empty()) {
      alone({i, 0, 0, r.bytes()});
      continue;
    }
    const std::size_t members = r.members.empty() ? 1 : r.members.size();
    for (std::size_t m = 0; m < members; ++m) {
      const std::size_t bytes = member_bytes(r, m);
      const std::size_t in_place_min = r.on_cuda() ? kDeviceInPlaceMinBytes : kInPlaceMinBytes;
      if (bytes >= in_place_min || bytes > threshold) {
        alone({i, m, 0, bytes});
        continue;
      }
      const auto key = fusion_key(r);
      auto it = open.begin();
      while (it != open.end() && it->first != key) ++it;
      if (it != open.end() && align(it->second.bytes) + bytes > threshold) {
        seal(std::move(it->second));
        open.erase(it);
        it = open.end();
      }
      if (it == open.end()) {
        open.emplace_back(key, Batch{});
        it = open.end() - 1;
        it->second.fused = true;
      }
      Batch& b = it->second;
      const std::size_t offset = align(b.bytes);
      b.items.push_back({i, m, offset, bytes});
      b.bytes = offset + bytes;
    }
  }
  for (auto& [key, b] : open) seal(std::move(b));
  return batches;
}

}  // namespace trainrun::detail
