// WriteFailure: a file of the job's output that could not be written in
// full: a rank's --output-filename file, the --timeline file, a stack dump.
// The launcher prints one line for each (write_failure_line) and the JSON
// report lists them (output_errors). Plain value.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace trainrun::cli {

struct WriteFailure {
  std::string file;         // as the user named it (DIR/rank.NN/stdout)
  std::string kind;         // "stdout", "stderr", "timeline", "stacks"
  std::optional<int> rank;  // the rank whose output it held, if one
  std::string error;        // strerror text: "No space left on device"
};

// "trainrun: warning: cannot write FILE: ERROR; CONSEQUENCE" (no newline).
inline std::string write_failure_line(const WriteFailure& failure, std::string_view consequence) {
  return "trainrun: warning: cannot write " + failure.file + ": " + failure.error + "; " + std::string(consequence);
}

}  // namespace trainrun::cli
