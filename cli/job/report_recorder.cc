#include "cli/job/report_recorder.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>

#include "cli/plan/host_list.h"
#include "cli/report/atomic_file.h"
#include "rendezvous/kv_table.h"
#include "contract/job_records.h"
#include "contract/kv_keys.h"
#include "trainrun/version.h"

namespace trainrun::cli {
namespace {

std::string job_key(std::string_view key) { return std::string(contract::kScopeJob) + "/" + std::string(key); }

std::string rank_key(std::string_view prefix, int rank) { return job_key(std::string(prefix) + std::to_string(rank)); }

std::int64_t unix_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

ReportRecorder::ReportRecorder(std::string path, std::vector<std::string> argv)
    : path_(std::move(path)), started_(Clock::now()), started_unix_ms_(unix_ms_now()) {
  report_.command_line = std::move(argv);
  report_.version = kVersion;
  report_.launcher = "local";
  report_.outcome = "success";
}

ReportRecorder::~ReportRecorder() = default;

double ReportRecorder::since_start(Clock::time_point t) const {
  return std::chrono::duration<double>(t - started_).count();
}

void ReportRecorder::planned(const JobPlan& plan, const std::vector<bool>& remote) {
  report_.hosts.clear();
  for (std::size_t i = 0; i < plan.hosts.size(); ++i) {
    report_.hosts.push_back({display_name(plan.hosts[i]), plan.hosts[i].slots, i < remote.size() && remote[i]});
  }
  report_.size = static_cast<int>(plan.ranks.size());
  report_.ranks.clear();
  for (const RankSlot& slot : plan.ranks) {
    ReportRank rank;
    rank.rank = slot.rank;
    rank.host = display_name(plan.hosts[static_cast<std::size_t>(slot.host_index)]);
    rank.local_rank = slot.local_rank;
    report_.ranks.push_back(std::move(rank));
  }
  stderr_.assign(report_.ranks.size(), OutputTail{});
}

void ReportRecorder::watch(rendezvous::KvTable& table) {
  if (!enabled()) return;
  table_ = &table;
  const auto wait_for = [this, &table](std::vector<std::string> keys, std::atomic<std::int64_t>& into) {
    auto stamp = [this, &into](const rendezvous::KvTable::SharedValues&) {
      into = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - started_).count();
    };
    rendezvous::KvTable::WaitId id = 0;
    if (table.get_or_wait(std::move(keys), stamp, &id)) stamp({});
    else waits_.push_back(id);
  };
  std::vector<std::string> ranks;
  for (int r = 0; r < report_.size; ++r) ranks.push_back(rank_key(contract::kKeyRankPrefix, r));
  wait_for(std::move(ranks), rendezvous_ns_);
  wait_for({job_key(contract::kKeyFirstOp)}, first_op_ns_);
}

void ReportRecorder::collect(const rendezvous::KvTable& table) {
  if (!enabled()) return;
  if (table_) {
    for (auto id : waits_) table_->cancel(id);
    waits_.clear();
    table_ = nullptr;
  }
  for (ReportRank& rank : report_.ranks) {
    if (auto text = table.get(rank_key(contract::kKeyRankPrefix, rank.rank))) {
      if (auto record = detail::decode_rank_record(*text)) rank.backend = record->backend;
    }
  }
  if (auto text = table.get(job_key(contract::kKeyStragglers))) {
    report_.stragglers = detail::decode_straggler_table(*text);
  }
  if (auto text = table.get(job_key(contract::kKeyTimelineError))) {
    detail::TimelineError failure = detail::decode_timeline_error(*text);
    report_.output_errors.push_back({std::move(failure.path), "timeline", 0, std::move(failure.error)});
  }
  const auto seconds = [](std::int64_t ns) { return ns < 0 ? std::nullopt : std::optional(ns / 1e9); };
  report_.rendezvous_s = seconds(rendezvous_ns_);
  report_.first_op_s = seconds(first_op_ns_);
}

void ReportRecorder::started(int rank, int pid) {
  if (rank < 0 || rank >= static_cast<int>(report_.ranks.size())) return;
  report_.ranks[static_cast<std::size_t>(rank)].pid = pid;
  report_.ranks[static_cast<std::size_t>(rank)].start_s = since_start(Clock::now());
}

void ReportRecorder::exited(int rank, std::string_view payload) {
  if (rank < 0 || rank >= static_cast<int>(report_.ranks.size())) return;
  ReportRank& r = report_.ranks[static_cast<std::size_t>(rank)];
  r.exit = decode_exit(payload);
  r.end_s = since_start(Clock::now());
}

void ReportRecorder::wrote_stderr(int rank, std::string_view bytes) {
  if (!enabled() || rank < 0 || rank >= static_cast<int>(stderr_.size())) return;
  stderr_[static_cast<std::size_t>(rank)].add(bytes);
}

void ReportRecorder::finished(const JobState& state) {
  report_.outcome = state.outcome();
  report_.summary = state.summary();
  report_.failed_rank = state.failed_rank();
  const std::optional<int> failed = state.failed_rank();
  const bool heard = failed && *failed >= 0 && *failed < static_cast<int>(stderr_.size());
  report_.stderr_tail = heard ? stderr_[static_cast<std::size_t>(*failed)].lines() : std::vector<std::string>{};
  report_.sigkilled = state.sigkilled();
}

void ReportRecorder::failed(std::string outcome, std::string summary) {
  report_.outcome = std::move(outcome);
  report_.summary = std::move(summary);
}

void ReportRecorder::ranks_unobserved(std::string why) {
  report_.notes.push_back(std::move(why));
  report_.ranks_observed = false;
}

void ReportRecorder::lost_output(const std::vector<WriteFailure>& failures) {
  report_.output_errors.insert(report_.output_errors.end(), failures.begin(), failures.end());
}

void ReportRecorder::write(int exit_code) {
  if (!enabled() || written_) return;
  written_ = true;
  report_.exit_code = exit_code;
  if (exit_code != 0 && report_.outcome == "success") {
    report_.outcome = exit_code == kExitUsage ? "usage_error" : "launch_failed";
  }
  const std::int64_t now_ms = unix_ms_now();
  report_.started_at = utc_timestamp(started_unix_ms_);
  report_.ended_at = utc_timestamp(now_ms);
  report_.wall_time_s = since_start(Clock::now());
  const std::string error = write_atomically(path_, to_json(report_));
  if (error.empty()) return;
  const bool removed = ::unlink(path_.c_str()) == 0;
  std::cerr << "trainrun: warning: cannot write the report " << path_ << ": " << error << "; this run has no report"
            << (removed ? " (the older one there was removed)" : "") << " and the exit status, " << exit_code
            << ", is the job's\n";
}

}  // namespace trainrun::cli
