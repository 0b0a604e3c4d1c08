// The launcher <-> rank contract: the stragglers table rank 0's engine puts
// in the rendezvous store (key job/stragglers, contract/kv_keys.h; made by
// lib/engine/straggler_tracker.h) and the launcher's JSON report decodes
// (cli/job/report_recorder.h). One line per rank: "rank cycles last median
// p95 host". Pure functions on a value type; safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace trainrun::detail {

// One rank's line of the stragglers table.
struct StragglerRow {
  int rank = 0;
  std::string host;
  std::uint64_t cycles = 0;  // cycles measured
  std::uint64_t last = 0;    // cycles in which it submitted last
  double median_lag_ms = 0;  // behind the first rank
  double p95_lag_ms = 0;
};

// decode: nullopt when malformed (a line short of a field, a negative rank,
// a lag that is not a finite number).
std::string encode_straggler_table(const std::vector<StragglerRow>& rows);
std::optional<std::vector<StragglerRow>> decode_straggler_table(const std::string& text);

}  // namespace trainrun::detail
