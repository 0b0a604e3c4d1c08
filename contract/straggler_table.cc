#include "contract/straggler_table.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace trainrun::detail {

std::string encode_straggler_table(const std::vector<StragglerRow>& rows) {
  std::string out;
  for (const StragglerRow& r : rows) {
    char line[160];
    std::snprintf(line, sizeof line, "%d %llu %llu %.3f %.3f ", r.rank, static_cast<unsigned long long>(r.cycles),
                  static_cast<unsigned long long>(r.last), r.median_lag_ms, r.p95_lag_ms);
    out += line + r.host + "\n";
  }
  return out;
}

std::optional<std::vector<StragglerRow>> decode_straggler_table(const std::string& text) {
  std::vector<StragglerRow> rows;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    StragglerRow row;
    if (!(fields >> row.rank >> row.cycles >> row.last >> row.median_lag_ms >> row.p95_lag_ms)) return std::nullopt;
    fields >> std::ws;
    std::getline(fields, row.host);
    if (row.rank < 0 || !std::isfinite(row.median_lag_ms) || !std::isfinite(row.p95_lag_ms)) return std::nullopt;
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace trainrun::detail
