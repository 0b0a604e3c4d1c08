#include "cli/plan/python_package.h"

#include <sys/stat.h>

#include <algorithm>

namespace trainrun::cli {

namespace {

std::string base_name(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string dir_name(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

bool runs_python(const std::vector<std::string>& command) {
  if (command.empty()) return false;
  const std::string name = base_name(command[0]);
  return name.compare(0, 6, "python") == 0 &&
         std::all_of(name.begin() + 6, name.end(), [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
}

std::string build_tree_python_package(const std::string& trainrun_path) {
  const std::string root = dir_name(trainrun_path) + "/integrations/python";
  struct stat st {};
  return ::stat((root + "/trainrun/__init__.py").c_str(), &st) == 0 && S_ISREG(st.st_mode) ? root : "";
}

void add_python_package(Options& options, const std::string& package_root, const char* launcher_python_path) {
  if (package_root.empty() || !runs_python(options.command)) return;
  for (const std::string& item : options.env_forward) {
    if (item.compare(0, item.find('='), "PYTHONPATH") == 0) return;
  }
  std::string value = package_root;
  if (launcher_python_path && *launcher_python_path) value += std::string(":") + launcher_python_path;
  options.env_forward.push_back("PYTHONPATH=" + value);
}

}  // namespace trainrun::cli
