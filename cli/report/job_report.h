// JobReport: everything the JSON job report (--report FILE) says about one
// run of trainrun, as plain values, and its rendering as JSON under the
// versioned schema cli/report/report.schema.json (documented in
// man/trainrun.1). Pure: no clock, no files; ReportRecorder fills it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli/output/write_failure.h"
#include "cli/report/exit_record.h"
#include "contract/straggler_table.h"

namespace trainrun::cli {

inline constexpr int kReportSchemaVersion = 1;
inline constexpr const char* kReportSchemaId = "https://trainrun.invalid/schemas/report-1.json";

struct ReportHost {
  std::string name;
  int slots = 0;
  bool remote = false;
};

struct ReportRank {
  int rank = 0;
  std::string host;
  int local_rank = 0;
  std::optional<int> pid;
  std::optional<std::string> backend;
  std::optional<double> start_s, end_s;  // since trainrun started
  std::optional<ExitRecord> exit;        // none: never started, or lost with its host
};

struct JobReport {
  // What the user ran.
  std::vector<std::string> command_line;  // trainrun's argv
  std::string version;
  std::string launcher;  // "local", "ssh", "srun", "mpirun"
  std::vector<ReportHost> hosts;
  int size = 0;  // ranks planned; 0 when unknown
  std::vector<ReportRank> ranks;
  // How it went.
  std::string outcome;  // see report_outcome()
  std::string summary;  // the one-line summary trainrun printed; empty on success
  std::optional<int> failed_rank;
  std::vector<std::string> stderr_tail;  // failed_rank's last lines of stderr (cli/report/output_tail.h)
  std::vector<int> sigkilled;            // ranks trainrun stopped that needed SIGKILL (JobState::sigkilled)
  int exit_code = 0;
  int restarts = 0;                  // whole-job restarts after a failure (--max-restarts)
  std::string started_at, ended_at;  // UTC, ISO 8601
  double wall_time_s = 0;
  std::optional<double> rendezvous_s;  // until every rank reached the rendezvous
  std::optional<double> first_op_s;    // until the engine's first op was ready on every rank
  std::optional<std::vector<detail::StragglerRow>> stragglers;
  std::vector<std::string> notes;           // what this launcher mode cannot know
  std::vector<WriteFailure> output_errors;  // output files not written in full
  bool ranks_observed = true;               // false: every rank's state is "unknown" (mpirun)
};

// The schema's outcome names, from what ended the job: "success",
// "rank_failed", "signal" (trainrun got SIGINT/SIGTERM/SIGHUP), "timeout"
// (--timeout), "launch_failed" (--start-timeout, a lost host or agent),
// "preflight_failed" (SSH pre-flight or a missing program), "usage_error".
std::string to_json(const JobReport& report);

// "2026-11-23T14:10:00.123Z" for a time in ms since the epoch.
std::string utc_timestamp(std::int64_t unix_ms);

}  // namespace trainrun::cli
