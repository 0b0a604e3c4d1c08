#include "cli/elastic/hang_detector.h"

#include <algorithm>

namespace trainrun::cli::elastic {

void HangDetector::beat(int worker, const std::optional<std::string>& value, Clock::time_point now) {
  if (!value) return;
  auto [it, first] = workers_.try_emplace(worker, Beat{*value, now, false});
  if (!first && it->second.value != *value) it->second = Beat{*value, now, false};
}

std::vector<int> HangDetector::hung(Clock::time_point now) {
  std::vector<int> out;
  if (timeout_.count() <= 0) return out;
  for (auto& [worker, b] : workers_) {
    if (b.reported || now - std::max(b.changed, settled_) < timeout_) continue;
    b.reported = true;
    out.push_back(worker);
  }
  return out;
}

}  // namespace trainrun::cli::elastic
