// Finding the user's program the way execvp would, so that a typo is one
// clear error before anything starts. Reads the filesystem only.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace trainrun::cli {

struct ProgramLookup {
  std::optional<std::string> path;  // absolute or as given when it contains '/'
  std::string error;                // why not, when path is empty
  int exit_code = 0;                // 127 not found, 126 not executable
};

ProgramLookup find_program(const std::string& name, const char* path_env);

// The Python interpreter the package trainrun is built for (integrations/python/core/meson.build:
// Debian's, which has python3-torch; the python3 first on PATH may be another).
inline constexpr const char* kPythonInterpreter = "/usr/bin/python3";

// How the command runs: torchrun's -m (Module: `python3 -m MODULE ARGS`),
// --run-path (Script: `python3 SCRIPT ARGS`), --no-python (Never: as given),
// or trainrun's own habit (AsNeeded, below).
enum class PythonRun { AsNeeded, Never, Module, Script };

// torchrun's habit: `trainrun -np 2 train.py` runs train.py with
// kPythonInterpreter when it ends in .py, is a readable file, and execvp
// would not run it (not executable, or not on PATH). Else `command` as given.
// `how` other than AsNeeded: as PythonRun says.
std::vector<std::string> with_interpreter(std::vector<std::string> command, const char* path_env,
                                          PythonRun how = PythonRun::AsNeeded);

}  // namespace trainrun::cli
