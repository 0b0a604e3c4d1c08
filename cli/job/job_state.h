// JobState: the launcher's bookkeeping of a running job and every decision
// that follows from it: which failure ends the job (only the first, and
// never a rank trainrun itself stopped), what trainrun exits with, and the
// one-line summary. Pure: events in, decisions out; no I/O, no clock.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/process/wait_status.h"

namespace trainrun::cli {

// Exit codes of trainrun's own (documented in man/trainrun.1).
inline constexpr int kExitUsage = 2;
inline constexpr int kExitTimeout = 124;  // --timeout expired
inline constexpr int kExitLaunch = 125;   // the job could not start or a host was lost
// Said after a rank's (or mpirun's) exit code that trainrun also uses for
// its own failures (2, 124, 125, 126, 127), so that a script or a reader
// of the summary tells the two apart; "" for every other code.
std::string rank_code_note(int code);

class JobState {
 public:
  enum class Action { None, Teardown, Kill };

  JobState(int size, std::vector<std::string> rank_hosts);

  // Elastic jobs (cli/elastic) number their processes by worker id, which
  // outlives rank numbers: messages then say "worker N".
  void name_ranks_workers() { unit_ = "worker"; }
  // An elastic job grew: the new rank's index.
  int add_rank(const std::string& host);

  void started(int rank, int pid);
  // raw: a wait() status. Returns Teardown when this is the job's first failure.
  Action exited(int rank, int raw_status);
  // An elastic job goes on without this rank: recorded, never the job's failure.
  void retired(int rank, int raw_status);
  // An elastic job gives up (reset limit, too few slots): Teardown; the job
  // ends with `reason` and the status of `rank`'s failure, or kExitLaunch
  // without one.
  Action elastic_failure(const std::string& reason, std::optional<int> rank);
  // SIGINT/SIGTERM/SIGHUP to trainrun: Teardown the first time, Kill on a
  // second SIGINT. One that comes during another cause's teardown (a
  // failure's, which may be a restart's) is kept as late_signal().
  Action stop_signal(int sig);
  // The first stop signal that came while another cause tore the job down.
  std::optional<int> late_signal() const { return late_signal_; }
  // The job ends as stopped by late_signal() (exit 128 + signal, outcome
  // "signal"): a restart it came during is cancelled. Needs a late signal.
  void end_by_late_signal();
  Action timed_out(double limit_s);
  // Ranks that never reached the rendezvous, still running or exited with
  // code 0 (without calling init: the others wait for them); Teardown if any.
  Action start_timeout(const std::vector<int>& missing, int limit_s);
  // A host agent went away with ranks still running (lost SSH connection...).
  Action host_lost(const std::string& reason);

  int size() const { return size_; }
  bool tearing_down() const { return tearing_down_; }
  bool all_exited() const { return exited_count_ == size_; }
  bool has_exited(int rank) const { return ranks_[rank].exited; }
  bool exited_with_zero(int rank) const;
  int running_on(const std::string& host) const;
  // Marks every unfinished rank on `host` as gone (its agent is lost).
  void abandon(const std::string& host);

  int exit_code() const;
  // The final line (empty for a clean run).
  std::string summary() const;
  // "rank 3 (host h1, pid 4242) exited with code 7".
  std::string describe(int rank) const;
  // "rank 3 (host h1, pid 4242)", whether it runs or not.
  std::string who(int rank) const;
  // For the JSON report (cli/report): "success", "rank_failed", "signal",
  // "timeout" or "launch_failed"; the rank whose failure ended the job.
  std::string outcome() const;
  std::optional<int> failed_rank() const { return cause_; }
  // The ranks trainrun stopped that died of SIGKILL: they outlived --grace
  // after the SIGTERM, or a second Ctrl-C killed them at once.
  std::vector<int> sigkilled() const;

 private:
  struct Rank {
    std::string host;
    int pid = -1;
    bool exited = false;
    bool stopped = false;  // exited during trainrun's teardown
    int status = 0;
  };
  Action begin_teardown();
  std::string ranks_on_hosts(const std::vector<int>& ranks) const;
  // "; rank 1 (host h1) was killed with SIGKILL after the --grace period", or "".
  std::string sigkill_clause() const;

  int size_;
  std::vector<Rank> ranks_;
  int exited_count_ = 0;
  bool tearing_down_ = false;
  bool killed_at_once_ = false;     // a second Ctrl-C: SIGKILL without a grace period
  std::optional<int> cause_;        // rank whose failure ended the job
  std::optional<int> stop_signal_;  // signal that stopped trainrun
  std::optional<int> late_signal_;  // see late_signal()
  std::string launch_failure_;      // start timeout, lost host
  std::optional<double> timeout_s_;
  std::string elastic_reason_;  // why an elastic job gave up
  std::string unit_ = "rank";
};

}  // namespace trainrun::cli
