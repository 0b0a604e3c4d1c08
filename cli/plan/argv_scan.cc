#include "cli/plan/argv_scan.h"

#include <algorithm>

#include "cli/plan/printable.h"

namespace trainrun::cli {
namespace {

// Levenshtein distance with adjacent transpositions (optimal string alignment).
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

std::string unknown(const std::string& token, const std::string& name, const OptionNames& names) {
  std::string line = "unknown option " + quoted(token);
  const std::string near = name.size() <= 64 ? nearest_name(name, names) : "";
  if (!near.empty()) line += "; did you mean --" + near + "?";
  return line + " (trainrun --help lists every option)";
}

// "-Hhost:2", "-x NAME", "-h": a cluster of one-letter options, the last
// of which may take the rest of the token as its value. False if any
// letter names no option.
bool short_cluster(const std::string& token, const OptionNames& names) {
  for (std::size_t i = 1; i < token.size(); ++i) {
    const auto it = names.short_names.find(token[i]);
    if (it == names.short_names.end()) return false;
    if (it->second) return true;  // the rest is its value
  }
  return true;
}

// "-np2", "--np=2" aside: a long option that takes a value with its number
// glued on. The name without the digits, or "" when that is no such option.
std::string glued_number(const std::string& name, const OptionNames& names) {
  const std::size_t digits = name.find_last_not_of("0123456789") + 1;
  if (digits == 0 || digits == name.size()) return "";
  const auto it = names.long_names.find(name.substr(0, digits));
  return it != names.long_names.end() && it->second ? it->first : "";
}

}  // namespace

std::string nearest_name(const std::string& name, const OptionNames& names) {
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(1, std::min<std::size_t>(3, name.size() / 3)) + 1;
  for (const auto& [candidate, value] : names.long_names) {
    const std::size_t d = edit_distance(name, candidate);
    if (d < best_distance) {
      best = candidate;
      best_distance = d;
    }
  }
  return best;
}

ArgvScan scan_options(const std::vector<std::string>& args, const OptionNames& names) {
  ArgvScan scan{args, ""};
  for (std::size_t i = 0; i < scan.args.size(); ++i) {
    std::string& token = scan.args[i];
    if (token == "--" || token.size() < 2 || token[0] != '-') break;  // the program from here on
    if (token == "-h" || token == "--help") continue;                 // the only spellings of the help
    const bool dashes = token[1] == '-';
    const std::size_t eq = token.find('=');
    const std::string name =
        token.substr(dashes ? 2 : 1, eq == std::string::npos ? std::string::npos : eq - (dashes ? 2 : 1));
    const auto long_name = names.long_names.find(name);
    if (long_name != names.long_names.end() && (dashes || name.size() > 1)) {
      if (!dashes) token.insert(0, "-");  // mpirun's -np, -hostfile, -host, ...
      const int values = long_name->second;
      if (values > 1 && eq == std::string::npos && i + values < scan.args.size()) {
        // "--blacklist-cooldown-range 60 300 ./train": CLI11 would take the
        // program's words as more values; it gets "--name=60,300" instead.
        const auto delimiter = names.delimiters.find(long_name->first);
        const char between = delimiter != names.delimiters.end() ? delimiter->second : ',';
        std::string joined = scan.args[i] + "=";
        for (int k = 1; k <= values; ++k) joined += (k > 1 ? std::string(1, between) : "") + scan.args[i + k];
        scan.args.erase(scan.args.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                        scan.args.begin() + static_cast<std::ptrdiff_t>(i) + 1 + values);
        scan.args[i] = std::move(joined);
        continue;
      }
      if (eq == std::string::npos) i += values;  // its values
      continue;
    }
    if (const std::string glued = glued_number(name, names); !glued.empty() && eq == std::string::npos) {
      const std::string spelled = token.substr(0, token.size() - (name.size() - glued.size()));
      scan.error = "unknown option " + quoted(token) + "; did you mean " + spelled + " " + name.substr(glued.size()) +
                   "? (a space between the option and its value)";
      scan.error_at = i;
      return scan;
    }
    if (dashes || !short_cluster(token, names)) {
      scan.error = unknown(token, name, names);
      scan.error_at = i;
      return scan;
    }
    const auto last = names.short_names.find(token.back());
    if (token.size() == 2 && last != names.short_names.end() && last->second) ++i;  // "-x NAME"
  }
  return scan;
}

}  // namespace trainrun::cli
