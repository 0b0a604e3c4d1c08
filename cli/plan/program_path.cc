#include "cli/plan/program_path.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace trainrun::cli {
namespace {

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

ProgramLookup check(const std::string& path) {
  ProgramLookup out;
  if (::access(path.c_str(), F_OK) != 0) {
    out.error = "no such file: " + path;
    out.exit_code = 127;
  } else if (is_directory(path) || ::access(path.c_str(), X_OK) != 0) {
    out.error = "not executable: " + path;
    out.exit_code = 126;
  } else {
    out.path = path;
  }
  return out;
}

}  // namespace

ProgramLookup find_program(const std::string& name, const char* path_env) {
  if (name.empty()) return {std::nullopt, "empty program name", 127};
  if (name.find('/') != std::string::npos) return check(name);
  const std::string search = path_env ? path_env : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  ProgramLookup first_failure;
  while (start <= search.size()) {
    std::size_t end = search.find(':', start);
    if (end == std::string::npos) end = search.size();
    std::string dir = search.substr(start, end - start);
    if (dir.empty()) dir = ".";
    ProgramLookup candidate = check(dir + "/" + name);
    if (candidate.path) return candidate;
    if (candidate.exit_code == 126 && first_failure.error.empty()) first_failure = candidate;
    start = end + 1;
  }
  if (!first_failure.error.empty()) return first_failure;
  return {std::nullopt, "program '" + name + "' not found in PATH", 127};
}

std::vector<std::string> with_interpreter(std::vector<std::string> command, const char* path_env, PythonRun how) {
  if (command.empty() || how == PythonRun::Never) return command;
  if (how == PythonRun::Module) command.insert(command.begin(), "-m");
  if (how != PythonRun::AsNeeded) {
    command.insert(command.begin(), kPythonInterpreter);
    return command;
  }
  const std::string& name = command.front();
  const bool python = name.size() > 3 && name.compare(name.size() - 3, 3, ".py") == 0;
  if (!python || find_program(name, path_env).path) return command;
  struct stat st {};
  if (::stat(name.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || ::access(name.c_str(), R_OK) != 0) return command;
  command.insert(command.begin(), kPythonInterpreter);
  return command;
}

}  // namespace trainrun::cli
