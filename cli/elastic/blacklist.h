// Which hosts an elastic job stops using, and for how long. A host is
// blacklisted when its ranks failed `failures_to_blacklist` times since it
// was last admitted, or at once when it is lost (its agent gone); with a
// cooldown it is retried once that has passed, else never again. Pure: the
// caller passes the time (tests use a fake clock); not thread-safe (the
// elastic driver's thread owns it).
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace trainrun::cli::elastic {

class Blacklist {
 public:
  using Clock = std::chrono::steady_clock;

  // cooldown 0: a blacklisted host is never used again; else retried after that long.
  explicit Blacklist(std::chrono::milliseconds cooldown, int failures_to_blacklist = 2);

  // A rank on `host` failed; true when this failure blacklisted it (false
  // too for a host already blacklisted: the failure is only counted).
  bool rank_failed(const std::string& host, Clock::time_point now);
  void host_lost(const std::string& host, Clock::time_point now);
  bool blocked(const std::string& host, Clock::time_point now) const;
  // Hosts whose cooldown ended at or before `now` since the last call:
  // usable again, their failure count reset; each returned once, sorted.
  std::vector<std::string> released(Clock::time_point now);
  // "h2 (2 failures; blacklisted until the job ends)", "h2 (2 failures;
  // retried in 12 s)", "h2 (lost; retried in 3 s)"; "h2 (1 failure)" for a
  // host not blacklisted, "h2" for one without failures.
  std::string describe(const std::string& host, Clock::time_point now) const;
  std::vector<std::string> blocked_hosts(Clock::time_point now) const;  // sorted

 private:
  struct Entry {
    int failures = 0;         // since the host was last admitted
    bool listed = false;      // blacklisted (maybe with its cooldown over, until released())
    bool lost = false;        // blacklisted because its agent was lost
    Clock::time_point until;  // end of the cooldown, when listed and cooldown_ > 0
  };

  void list(Entry& entry, Clock::time_point now) const;
  bool blocks(const Entry& entry, Clock::time_point now) const;

  std::chrono::milliseconds cooldown_;
  int failures_to_blacklist_;
  std::map<std::string, Entry> hosts_;  // hosts with failures or listed; ordered for sorted answers
};

}  // namespace trainrun::cli::elastic
