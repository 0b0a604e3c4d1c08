// The text of the pre-flight and `trainrun doctor` reports: rows of
// (host, check, result) as an aligned table, and the doctor's matrix of
// who reaches whom. Pure functions; no I/O.
#pragma once

#include <string>
#include <vector>

namespace trainrun::cli {

struct CheckRow {
  std::string host;
  std::string check;   // "connect", "host key", "login", "program", ...
  std::string result;  // "ok ..." or the error
  bool ok = false;
};

// "  host  check  result" lines under a header, columns aligned, each line
// indented by two spaces and ending in '\n'.
std::string format_check_table(const std::vector<CheckRow>& rows);

// The launcher's pre-flight failure: a heading line that counts the
// failed hosts out of `hosts`, then the table of the failed checks only.
std::string preflight_failure_report(const std::vector<CheckRow>& rows, std::size_t hosts);

// rows[i][j]: what `from[i]` got connecting to `to[j]` ("" = reached,
// "-" = not tried). A grid of "ok", "FAIL" and "-", then one line per
// failure with its error.
std::string format_reach_matrix(const std::vector<std::string>& from, const std::vector<std::string>& to,
                                const std::vector<std::vector<std::string>>& rows);

}  // namespace trainrun::cli
