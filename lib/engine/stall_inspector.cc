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

// "allreduce 'x' (missing ranks 1, 3); ..." for the ops that pass `keep`.
template <typename Keep>
std::string describe(const std::vector<Coordinator::Pending>& pending, Keep keep, std::size_t* count) {
  std::string text;
  *count = 0;
  for (const auto& p : pending) {
    if (!keep(p)) continue;
    if (++*count > kMaxListed) continue;
    text += (*count > 1 ? "; " : "") + std::string(to_string(p.op)) + " '" + p.name + "' (missing rank" +
            (p.missing.size() > 1 ? "s " : " ");
    for (std::size_t i = 0; i < p.missing.size(); ++i) text += (i ? ", " : "") + std::to_string(p.missing[i]);
    text += ")";
  }
  if (*count > kMaxListed) text += "; and " + std::to_string(*count - kMaxListed) + " more";
  return text;
}

}  // namespace

std::optional<std::string> StallInspector::warning(const std::vector<Coordinator::Pending>& pending,
                                                   Clock::time_point now) {
  if (warning_.count() <= 0) return std::nullopt;
  const auto limit = std::chrono::duration_cast<Clock::duration>(warning_);
  if (last_warning_ && now - *last_warning_ < limit) return std::nullopt;
  std::size_t count = 0;
  const std::string ops = describe(
      pending, [&](const auto& p) { return now - p.since >= limit; }, &count);
  if (count == 0) return std::nullopt;
  last_warning_ = now;
  return "stall: " + std::to_string(count) + " op(s) waited more than " + seconds_text(warning_) +
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
      pending, [](const auto&) { return true; }, &count);
  return "stall: an op waited more than " + seconds_text(shutdown_) + " (" + protocol::kEnvStallShutdown +
         "), so the engine stopped and failed every pending op" + (count ? "; waiting: " + ops : "");
}

std::optional<std::string> StallInspector::blocked_warning(Clock::duration waited, Clock::time_point now,
                                                           std::uint64_t answered) {
  const auto limit = std::chrono::duration_cast<Clock::duration>(warning_);
  if (warning_.count() <= 0 || waited < limit) return std::nullopt;
  if (last_blocked_warning_ && now - *last_blocked_warning_ < limit) return std::nullopt;
  last_blocked_warning_ = now;
  const std::string head =
      "stall: the engine waited more than " + seconds_text(warning_) + " for the other ranks' engines";
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
  return "stall: the engine waited more than " + seconds_text(shutdown_) + " (" + protocol::kEnvStallShutdown +
         ") for the other ranks' engines, so it aborted the backend and failed every pending op";
}

std::string StallInspector::out_of_step_wait() const {
  return seconds_text(warning_) + " (" + protocol::kEnvStallWarning + ")";
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
