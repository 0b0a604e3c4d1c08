// ReportRecorder: gathers the JSON job report (cli/report/job_report.h)
// while trainrun runs, and writes it atomically (a temporary file in the
// same directory, then rename) once, whatever the outcome: main() calls
// write() on every path out of a launch. Times come from the launcher's
// clocks only: ranks' start and end when their agents' frames arrive, the
// rendezvous and first-op moments when the keys the ranks put in the
// launcher's store appear (KvTable waiters). Used on the supervising thread;
// the waiters' callbacks, on the server thread, touch atomics only.
#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "cli/plan/job_plan.h"
#include "cli/job/job_state.h"
#include "cli/report/job_report.h"
#include "cli/report/output_tail.h"
#include "cli/job/rank_events.h"

namespace trainrun::rendezvous {
class KvTable;
}

namespace trainrun::cli {

// The environment variable that names the report file when --report does not.
inline constexpr const char* kEnvReport = "TRAINRUN_REPORT";

class ReportRecorder : public RankEvents {
 public:
  // path empty: records nothing and writes nothing.
  ReportRecorder(std::string path, std::vector<std::string> argv);
  ~ReportRecorder() override;
  bool enabled() const { return !path_.empty(); }

  void set_launcher(std::string launcher) { report_.launcher = std::move(launcher); }
  // The hosts and ranks trainrun will start; remote[i]: host i is reached by SSH.
  void planned(const JobPlan& plan, const std::vector<bool>& remote);
  // Waits for every rank's rendezvous key and the first-op key in `table`.
  void watch(rendezvous::KvTable& table);
  // Before the rendezvous server stops: each rank's backend, the stragglers,
  // a timeline file rank 0 could not write.
  void collect(const rendezvous::KvTable& table);
  void started(int rank, int pid) override;
  void exited(int rank, std::string_view payload) override;
  // The last lines of each rank's stderr: the failing rank's go to the report.
  void wrote_stderr(int rank, std::string_view bytes) override;
  // How the job ended: from the supervision, or before it (pre-flight...).
  void finished(const JobState& state);
  void failed(std::string outcome, std::string summary);
  // The whole job was restarted after a failure (--max-restarts).
  void restarted() { ++report_.restarts; }
  // Another program starts the ranks (mpirun): `why` goes to the notes, and
  // every rank's state is "unknown".
  void ranks_unobserved(std::string why);
  // Output files that could not be written in full (output_errors).
  void lost_output(const std::vector<WriteFailure>& failures);

  // How the job ended, as recorded so far (the report's outcome and summary).
  const std::string& outcome() const { return report_.outcome; }
  const std::string& summary() const { return report_.summary; }

  // Writes the report once (later calls do nothing). A failure to write it
  // is one warning line and does not change trainrun's exit status; an
  // older report at the path is removed, so no script takes it for this
  // run's.
  void write(int exit_code);

 private:
  using Clock = std::chrono::steady_clock;
  double since_start(Clock::time_point t) const;

  std::string path_;
  JobReport report_;
  Clock::time_point started_;
  std::int64_t started_unix_ms_ = 0;
  std::atomic<std::int64_t> rendezvous_ns_{-1}, first_op_ns_{-1};
  rendezvous::KvTable* table_ = nullptr;
  std::vector<std::uint64_t> waits_;
  std::vector<OutputTail> stderr_;  // per rank of the plan
  bool written_ = false;
};

}  // namespace trainrun::cli
