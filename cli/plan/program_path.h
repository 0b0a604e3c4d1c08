// Finding the user's program the way execvp would, so that a typo is one
// clear error before anything starts. Reads the filesystem only.
#pragma once

#include <optional>
#include <string>

namespace trainrun::cli {

struct ProgramLookup {
  std::optional<std::string> path;  // absolute or as given when it contains '/'
  std::string error;                // why not, when path is empty
  int exit_code = 0;                // 127 not found, 126 not executable
};

ProgramLookup find_program(const std::string& name, const char* path_env);

}  // namespace trainrun::cli
