#include "cli/elastic/blacklist.h"

#include <algorithm>

namespace trainrun::cli::elastic {

Blacklist::Blacklist(std::chrono::milliseconds cooldown, int failures_to_blacklist)
    : cooldown_(std::max(cooldown, std::chrono::milliseconds(0))),
      failures_to_blacklist_(std::max(failures_to_blacklist, 1)) {}

void Blacklist::list(Entry& entry, Clock::time_point now) const {
  entry.listed = true;
  entry.until = now + cooldown_;
}

bool Blacklist::blocks(const Entry& entry, Clock::time_point now) const {
  return entry.listed && (cooldown_.count() == 0 || now < entry.until);
}

bool Blacklist::rank_failed(const std::string& host, Clock::time_point now) {
  Entry& entry = hosts_[host];
  ++entry.failures;
  // A host still listed (its cooldown over but not yet released, so not
  // admitted again) keeps counting; reaching the limit lists it afresh.
  if (blocks(entry, now) || entry.failures < failures_to_blacklist_) return false;
  list(entry, now);
  return true;
}

void Blacklist::host_lost(const std::string& host, Clock::time_point now) {
  Entry& entry = hosts_[host];
  entry.lost = true;
  list(entry, now);
}

bool Blacklist::blocked(const std::string& host, Clock::time_point now) const {
  const auto it = hosts_.find(host);
  return it != hosts_.end() && blocks(it->second, now);
}

std::vector<std::string> Blacklist::released(Clock::time_point now) {
  std::vector<std::string> out;
  if (cooldown_.count() == 0) return out;
  for (auto it = hosts_.begin(); it != hosts_.end();) {
    if (it->second.listed && it->second.until <= now) {
      out.push_back(it->first);
      it = hosts_.erase(it);  // admitted again with a clean slate
    } else {
      ++it;
    }
  }
  return out;
}

std::string Blacklist::describe(const std::string& host, Clock::time_point now) const {
  const auto it = hosts_.find(host);
  if (it == hosts_.end()) return host;
  const Entry& entry = it->second;
  std::string why =
      entry.lost ? "lost" : std::to_string(entry.failures) + (entry.failures == 1 ? " failure" : " failures");
  if (!entry.listed) return host + " (" + why + ")";
  if (cooldown_.count() == 0) return host + " (" + why + "; blacklisted until the job ends)";
  // Whole seconds, rounded up, so that "retried in 0 s" never shows while it is still blocked.
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(entry.until - now).count();
  const long long seconds = left <= 0 ? 0 : (left + 999) / 1000;
  return host + " (" + why + "; retried in " + std::to_string(seconds) + " s)";
}

std::vector<std::string> Blacklist::blocked_hosts(Clock::time_point now) const {
  std::vector<std::string> out;
  for (const auto& [host, entry] : hosts_) {
    if (blocks(entry, now)) out.push_back(host);
  }
  return out;
}

}  // namespace trainrun::cli::elastic
