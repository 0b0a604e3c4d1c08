#include "cli/ssh/check_table.h"

#include <algorithm>

namespace trainrun::cli {
namespace {

std::string pad(const std::string& text, std::size_t width) {
  return text + std::string(width > text.size() ? width - text.size() : 0, ' ');
}

}  // namespace

std::string format_check_table(const std::vector<CheckRow>& rows) {
  std::size_t host_width = 4, check_width = 5;
  for (const CheckRow& row : rows) {
    host_width = std::max(host_width, row.host.size());
    check_width = std::max(check_width, row.check.size());
  }
  std::string out = "  " + pad("host", host_width) + "  " + pad("check", check_width) + "  result\n";
  for (const CheckRow& row : rows) {
    out += "  " + pad(row.host, host_width) + "  " + pad(row.check, check_width) + "  " + row.result + "\n";
  }
  return out;
}

std::string preflight_failure_report(const std::vector<CheckRow>& rows, std::size_t hosts) {
  std::vector<CheckRow> failed;
  std::vector<std::string> failed_hosts;
  for (const CheckRow& row : rows) {
    if (row.ok) continue;
    failed.push_back(row);
    if (std::find(failed_hosts.begin(), failed_hosts.end(), row.host) == failed_hosts.end()) {
      failed_hosts.push_back(row.host);
    }
  }
  std::string names;
  for (const std::string& host : failed_hosts) names += (names.empty() ? "" : ", ") + host;
  return "trainrun: pre-flight checks failed on " + std::to_string(failed_hosts.size()) + " of " +
         std::to_string(hosts) + " host(s) (" + names + "); nothing was started\n" + format_check_table(failed);
}

std::string format_reach_matrix(const std::vector<std::string>& from, const std::vector<std::string>& to,
                                const std::vector<std::vector<std::string>>& rows) {
  std::size_t first = 4;  // "from"
  for (const std::string& name : from) first = std::max(first, name.size());
  std::vector<std::size_t> widths;
  std::string out = "  " + pad("from", first);
  for (const std::string& name : to) {
    widths.push_back(std::max<std::size_t>(name.size(), 4));
    out += "  " + pad(name, widths.back());
  }
  out.erase(out.find_last_not_of(' ') + 1);
  out += "\n";
  std::string errors;
  for (std::size_t i = 0; i < from.size(); ++i) {
    std::string line = "  " + pad(from[i], first);
    for (std::size_t j = 0; j < to.size(); ++j) {
      const std::string& cell = rows[i][j];
      line += "  " + pad(cell.empty() ? "ok" : cell == "-" ? "-" : "FAIL", widths[j]);
      if (!cell.empty() && cell != "-") errors += "  " + from[i] + " -> " + to[j] + ": " + cell + "\n";
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out += line + "\n";
  }
  return out + errors;
}

}  // namespace trainrun::cli
