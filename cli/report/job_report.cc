#include "cli/report/job_report.h"

#include <sys/wait.h>

#include <cmath>
#include <ctime>
#include <nlohmann/json.hpp>

#include "cli/process/wait_status.h"

namespace trainrun::cli {
namespace {

using json = nlohmann::ordered_json;

template <typename T>
json optional(const std::optional<T>& value) {
  return value ? json(*value) : json(nullptr);
}

// Seconds with millisecond precision: the report is for people and scripts,
// not for benchmarks.
json seconds(std::optional<double> s) { return s ? json(std::round(*s * 1000) / 1000) : json(nullptr); }

json rank_json(const ReportRank& r, bool observed) {
  json out = {{"rank", r.rank},
              {"host", r.host},
              {"local_rank", r.local_rank},
              {"pid", optional(r.pid)},
              {"backend", optional(r.backend)},
              {"start_s", seconds(r.start_s)},
              {"end_s", seconds(r.end_s)},
              {"state", "unknown"},
              {"exit_code", nullptr},
              {"signal", nullptr},
              {"max_rss_kb", nullptr},
              {"user_cpu_s", nullptr},
              {"system_cpu_s", nullptr}};
  if (!r.pid && observed) out["state"] = "not_started";
  if (!r.exit) return out;
  const int status = r.exit->status;
  if (WIFSIGNALED(status)) {
    out["state"] = "killed";
    out["signal"] = signal_name(WTERMSIG(status));
  } else {
    out["state"] = "exited";
    out["exit_code"] = WEXITSTATUS(status);
  }
  if (r.exit->usage) {
    out["max_rss_kb"] = r.exit->usage->max_rss_kb;
    out["user_cpu_s"] = seconds(static_cast<double>(r.exit->usage->user_us) / 1e6);
    out["system_cpu_s"] = seconds(static_cast<double>(r.exit->usage->system_us) / 1e6);
  }
  return out;
}

json stragglers_json(const std::optional<std::vector<detail::StragglerRow>>& rows) {
  if (!rows) return nullptr;
  json list = json::array();
  std::uint64_t cycles = 0;
  for (const detail::StragglerRow& row : *rows) {
    cycles = std::max(cycles, row.cycles);
    const double share = row.cycles ? 100.0 * static_cast<double>(row.last) / static_cast<double>(row.cycles) : 0;
    list.push_back({{"rank", row.rank},
                    {"host", row.host},
                    {"last", row.last},
                    {"last_percent", std::round(share * 10) / 10},
                    {"median_lag_ms", std::round(row.median_lag_ms * 1000) / 1000},
                    {"p95_lag_ms", std::round(row.p95_lag_ms * 1000) / 1000}});
  }
  return {{"cycles", cycles}, {"ranks", list}};
}

json output_errors_json(const std::vector<WriteFailure>& failures) {
  json list = json::array();
  for (const WriteFailure& f : failures) {
    list.push_back({{"file", f.file}, {"kind", f.kind}, {"rank", optional(f.rank)}, {"error", f.error}});
  }
  return list;
}

}  // namespace

std::string to_json(const JobReport& report) {
  json hosts = json::array();
  for (const ReportHost& h : report.hosts)
    hosts.push_back({{"name", h.name}, {"slots", h.slots}, {"remote", h.remote}});
  json ranks = json::array();
  for (const ReportRank& r : report.ranks) ranks.push_back(rank_json(r, report.ranks_observed));
  json failure = nullptr;
  if (report.outcome != "success") {
    failure = {{"rank", optional(report.failed_rank)},
               {"cause", report.summary},
               {"stderr_tail", report.stderr_tail},
               {"sigkilled_ranks", report.sigkilled}};
  }
  const json out = {
      {"$schema", kReportSchemaId},
      {"schema_version", kReportSchemaVersion},
      {"trainrun_version", report.version},
      {"command_line", report.command_line},
      {"launcher", report.launcher},
      {"hosts", hosts},
      {"size", report.size},
      {"outcome", report.outcome},
      {"exit_code", report.exit_code},
      {"failure", failure},
      {"restarts", report.restarts},
      {"started_at", report.started_at},
      {"ended_at", report.ended_at},
      {"wall_time_s", seconds(report.wall_time_s)},
      {"rendezvous_s", seconds(report.rendezvous_s)},
      {"first_op_s", seconds(report.first_op_s)},
      {"ranks", ranks},
      {"stragglers", stragglers_json(report.stragglers)},
      {"notes", report.notes},
      {"output_errors", output_errors_json(report.output_errors)},
  };
  // Invalid UTF-8 (a program name, a host) is replaced, never a throw.
  return out.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string utc_timestamp(std::int64_t unix_ms) {
  const std::time_t seconds_part = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  ::gmtime_r(&seconds_part, &tm);
  char text[40];
  const std::size_t n = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(text + n, sizeof text - n, ".%03dZ", static_cast<int>(unix_ms % 1000));
  return text;
}

}  // namespace trainrun::cli
