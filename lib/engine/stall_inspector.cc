#include "lib/engine/stall_inspector.h"

#include <algorithm>
#include <cmath>

#include "contract/environment.h"

namespace trainrun::detail {
namespace {

constexpr std::size_t kMaxListed = 8;

std::string seconds_text(StallInspector::Seconds s) {
  std::string text = std::to_string(s.count());
  text.erase(text.find_last_not_of('0') + 1);
  if (text.back() == '.') text.pop_back();
  return text + " s";
}

// "allreduce 'x' (missing ranks 1, 3); ..." for the ops that pass `keep`,
// naming job ranks.
template <typename Keep>
std::string describe(const std::vector<Coordinator::Pending>& pending, const RankNames& names, Keep keep,
                     std::size_t* count) {
  std::string text;
  *count = 0;
  for (const auto& p : pending) {
    if (!keep(p)) continue;
    if (++*count > kMaxListed) continue;
    text += (*count > 1 ? "; " : "") + std::string(to_string(p.op)) + " '" + p.name + "' (missing " +
            names.ranks_text(p.missing) + ")";
  }
  if (*count > kMaxListed) text += "; and " + std::to_string(*count - kMaxListed) + " more";
  return text;
}

// What a warning says of an op: "name/rank" for each rank it misses.
void add_stalled_keys(const Coordinator::Pending& p, std::vector<std::string>& keys) {
  keys.push_back(p.name + "/");
  for (int r : p.missing) keys.push_back(p.name + "/" + std::to_string(r));
}

}  // namespace

std::optional<std::string> StallInspector::warning(const std::vector<Coordinator::Pending>& pending,
                                                   Clock::time_point now) {
  if (warning_.count() <= 0) return std::nullopt;
  const auto limit = std::chrono::duration_cast<Clock::duration>(warning_);
  auto stalled = [&](const Coordinator::Pending& p) { return now - p.since >= limit; };
  std::vector<std::string> keys;
  for (const auto& p : pending) {
    if (stalled(p)) add_stalled_keys(p, keys);
  }
  std::sort(keys.begin(), keys.end());
  // One stall, one line: again only once an op or a missing rank is new to it.
  const bool news = !std::includes(warned_.begin(), warned_.end(), keys.begin(), keys.end());
  if (keys.empty()) warned_.clear();
  if (!news || (last_warning_ && now - *last_warning_ < limit)) return std::nullopt;
  std::size_t count = 0;
  const std::string ops = describe(pending, names_, stalled, &count);
  last_warning_ = now;
  warned_ = std::move(keys);
  return "stall: " + scope() + std::to_string(count) + " op(s) waited more than " + seconds_text(warning_) +
         " for other ranks: " + ops;
}

bool StallInspector::shutdown_due(const std::vector<Coordinator::Pending>& pending, Clock::time_point now) const {
  if (shutdown_.count() <= 0) return false;
  const auto limit = std::chrono::duration_cast<Clock::duration>(shutdown_);
  return std::any_of(pending.begin(), pending.end(), [&](const auto& p) { return now - p.since >= limit; });
}

std::string StallInspector::shutdown_message(const std::vector<Coordinator::Pending>& pending) const {
  std::size_t count = 0;
  const std::string ops = describe(
      pending, names_, [](const auto&) { return true; }, &count);
  return "stall: " + scope() + "an op waited more than " + seconds_text(shutdown_) + " (" +
         contract::kEnvStallShutdown + "), so the engine stopped and failed every pending op" +
         (count ? "; waiting: " + ops : "");
}

std::optional<std::string> StallInspector::blocked_warning(Clock::duration waited, Clock::time_point now,
                                                           std::uint64_t answered) {
  const auto limit = std::chrono::duration_cast<Clock::duration>(warning_);
  if (warning_.count() <= 0 || waited < limit) return std::nullopt;
  const Clock::time_point since = now - waited;
  if (warned_blocked_ == since) return std::nullopt;  // this wait was warned about
  warned_blocked_ = since;
  const std::string head =
      "stall: " + scope() + "the engine waited more than " + seconds_text(warning_) + " for the other ranks' engines";
  if (answered == 0) return head + " (each starts at its rank's first engine call: has one not made it?)";
  // They all answered `answered` cycles: the engines ran, one stopped.
  const double ago = std::round(std::chrono::duration<double>(waited).count() * 10) / 10;
  return head + ", which answered " + std::to_string(answered) + " cycle(s) until " + seconds_text(Seconds(ago)) +
         " ago: one stopped answering (a stopped or hung process, or the network to it cut)";
}

bool StallInspector::blocked_shutdown_due(Clock::duration waited) const {
  return shutdown_.count() > 0 && waited >= std::chrono::duration_cast<Clock::duration>(shutdown_);
}

std::string StallInspector::blocked_shutdown_message() const {
  return "stall: " + scope() + "the engine waited more than " + seconds_text(shutdown_) + " (" +
         contract::kEnvStallShutdown +
         ") for the other ranks' engines, so it aborted the backend and failed every pending op";
}

std::string StallInspector::out_of_step_wait() const {
  return seconds_text(warning_) + " (" + contract::kEnvStallWarning + ")";
}

std::optional<StallInspector::Clock::duration> StallInspector::renegotiate_after() const {
  Seconds after{0};
  for (Seconds s : {warning_, shutdown_}) {
    if (s.count() > 0 && (after.count() == 0 || s < after)) after = s;
  }
  if (after.count() == 0) return std::nullopt;
  return std::chrono::duration_cast<Clock::duration>(after);
}

}  // namespace trainrun::detail
