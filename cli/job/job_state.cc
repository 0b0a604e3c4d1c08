#include "cli/job/job_state.h"

#include "contract/decimal.h"

#include <sys/wait.h>

#include <csignal>
#include <algorithm>
#include <cstring>

namespace trainrun::cli {
namespace {

std::string rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (std::size_t i = 0; i < ranks.size() && i < 16; ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
  if (ranks.size() > 16) out += " and " + std::to_string(ranks.size() - 16) + " more";
  return out;
}

}  // namespace

JobState::JobState(int size, std::vector<std::string> rank_hosts)
    : size_(size), ranks_(static_cast<std::size_t>(size)) {
  for (int r = 0; r < size; ++r) ranks_[r].host = rank_hosts[r];
}

int JobState::add_rank(const std::string& host) {
  ranks_.push_back(Rank{host});
  return size_++;
}

void JobState::started(int rank, int pid) { ranks_[rank].pid = pid; }

void JobState::retired(int rank, int raw_status) {
  Rank& r = ranks_[rank];
  if (r.exited) return;
  r.exited = true;
  r.status = raw_status;
  ++exited_count_;
}

JobState::Action JobState::elastic_failure(const std::string& reason, std::optional<int> rank) {
  if (tearing_down_) return Action::None;
  elastic_reason_ = reason;
  if (rank) cause_ = rank;
  else launch_failure_ = reason;
  return begin_teardown();
}

JobState::Action JobState::begin_teardown() {
  if (tearing_down_) return Action::None;
  tearing_down_ = true;
  return Action::Teardown;
}

JobState::Action JobState::exited(int rank, int raw_status) {
  Rank& r = ranks_[rank];
  if (r.exited) return Action::None;
  r.exited = true;
  r.status = raw_status;
  ++exited_count_;
  const bool failed = !(WIFEXITED(raw_status) && WEXITSTATUS(raw_status) == 0);
  // Ranks exiting after trainrun began the teardown were stopped by it.
  r.stopped = tearing_down_;
  if (!failed || tearing_down_) return Action::None;
  cause_ = rank;
  return begin_teardown();
}

JobState::Action JobState::stop_signal(int sig) {
  // During a teardown (the user's or a failure's) a Ctrl-C means: no more grace.
  if (tearing_down_) {
    if (!stop_signal_ && !late_signal_) late_signal_ = sig;
    if (sig != SIGINT) return Action::None;
    killed_at_once_ = true;
    return Action::Kill;
  }
  stop_signal_ = sig;
  return begin_teardown();
}

void JobState::end_by_late_signal() {
  if (late_signal_) stop_signal_ = late_signal_;
}

JobState::Action JobState::timed_out(double limit_s) {
  if (tearing_down_) return Action::None;
  timeout_s_ = limit_s;
  return begin_teardown();
}

// "rank 1 (host h1)", "ranks 1,2 (hosts h1, h2)".
std::string JobState::ranks_on_hosts(const std::vector<int>& ranks) const {
  std::vector<std::string> hosts;
  for (int rank : ranks) {
    if (std::find(hosts.begin(), hosts.end(), ranks_[rank].host) == hosts.end()) hosts.push_back(ranks_[rank].host);
  }
  std::string host_text;
  for (std::size_t i = 0; i < hosts.size(); ++i) host_text += (i ? ", " : "") + hosts[i];
  return std::string(ranks.size() == 1 ? "rank " : "ranks ") + rank_list(ranks) + " (host" +
         (hosts.size() == 1 ? " " : "s ") + host_text + ")";
}

JobState::Action JobState::start_timeout(const std::vector<int>& missing, int limit_s) {
  if (tearing_down_ || missing.empty()) return Action::None;
  std::vector<int> running, left;
  for (int rank : missing) (ranks_[rank].exited ? left : running).push_back(rank);
  const std::string limit = std::to_string(limit_s) + " s";
  if (!running.empty()) {
    launch_failure_ = ranks_on_hosts(running) + " did not reach the rendezvous within " + limit + " (--start-timeout)";
  }
  if (!left.empty()) {
    launch_failure_ += (launch_failure_.empty() ? "" : "; ") + ranks_on_hosts(left) +
                       " exited with code 0 without calling init, and the other ranks wait for " +
                       (left.size() == 1 ? "it" : "them") + " (--start-timeout " + limit + ")";
  }
  return begin_teardown();
}

JobState::Action JobState::host_lost(const std::string& reason) {
  if (launch_failure_.empty() && !cause_) launch_failure_ = reason;
  return begin_teardown();
}

bool JobState::exited_with_zero(int rank) const {
  const Rank& r = ranks_[rank];
  return r.exited && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0;
}

int JobState::running_on(const std::string& host) const {
  int n = 0;
  for (const Rank& r : ranks_) n += (r.host == host && !r.exited);
  return n;
}

void JobState::abandon(const std::string& host) {
  for (Rank& r : ranks_) {
    if (r.host == host && !r.exited) {
      r.exited = true;
      r.status = SIGKILL;  // as far as we can know: it is gone with its host
      ++exited_count_;
    }
  }
}

std::string JobState::who(int rank) const {
  const Rank& r = ranks_[rank];
  return unit_ + " " + std::to_string(rank) + " (host " + r.host + (r.pid > 0 ? ", pid " + std::to_string(r.pid) : "") +
         ")";
}

std::string rank_code_note(int code) {
  if (code != kExitUsage && code != kExitTimeout && code != kExitLaunch && code != 126 && code != 127) return "";
  return "; trainrun exits " + std::to_string(code) + " with it: the program's code, not a trainrun error";
}

std::string JobState::describe(int rank) const {
  const Rank& r = ranks_[rank];
  std::string text = who(rank) + " ";
  if (WIFEXITED(r.status)) return text + "exited with code " + std::to_string(WEXITSTATUS(r.status));
  const int sig = WTERMSIG(r.status);
  text += "was killed by " + signal_name(sig);
  if (sig == SIGKILL) return text + " (out of memory? check dmesg on " + r.host + ")";
  const char* description = sigdescr_np(sig);
  return description ? text + " (" + description + ")" : text;
}

int JobState::exit_code() const {
  if (stop_signal_) return 128 + *stop_signal_;
  if (timeout_s_) return kExitTimeout;
  if (!launch_failure_.empty()) return kExitLaunch;
  if (cause_) return shell_status(ranks_[*cause_].status);
  return 0;
}

std::string JobState::outcome() const {
  if (stop_signal_) return "signal";
  if (timeout_s_) return "timeout";
  if (!launch_failure_.empty()) return "launch_failed";
  return cause_ ? "rank_failed" : "success";
}

std::vector<int> JobState::sigkilled() const {
  std::vector<int> ranks;
  for (int r = 0; r < size_; ++r) {
    const int status = ranks_[r].status;
    if (ranks_[r].stopped && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) ranks.push_back(r);
  }
  return ranks;
}

std::string JobState::sigkill_clause() const {
  const std::vector<int> ranks = sigkilled();
  if (ranks.empty()) return "";
  return "; " + ranks_on_hosts(ranks) + (ranks.size() == 1 ? " was" : " were") + " killed with SIGKILL " +
         (killed_at_once_ ? "at once (SIGINT during the teardown)" : "after the --grace period");
}

std::string JobState::summary() const {
  if (stop_signal_)
    return "trainrun: stopped by " + signal_name(*stop_signal_) + "; all ranks were terminated" + sigkill_clause();
  if (timeout_s_)
    return "trainrun: the job ran longer than --timeout " + detail::shortest_decimal(*timeout_s_) +
           " s; all ranks were terminated" + sigkill_clause();
  if (!launch_failure_.empty()) return "trainrun: " + launch_failure_;
  if (!elastic_reason_.empty()) return "trainrun: " + elastic_reason_;
  if (cause_) {
    const int status = ranks_[*cause_].status;
    return "trainrun: job failed: " + describe(*cause_) +
           (WIFEXITED(status) ? rank_code_note(WEXITSTATUS(status)) : "") + sigkill_clause();
  }
  return "";
}

}  // namespace trainrun::cli
