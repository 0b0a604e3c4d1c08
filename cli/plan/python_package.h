// A Python program started by a build tree's trainrun imports that build's
// package: the launcher puts <build>/integrations/python first on the ranks'
// PYTHONPATH, as it already starts its own agent. An installed trainrun's
// package is where its interpreter looks already, so nothing is added then.
#pragma once

#include <string>
#include <vector>

#include "cli/plan/options.h"

namespace trainrun::cli {

// Pure: the command runs a Python interpreter (python, python3, python3.11,
// as a name or a path).
bool runs_python(const std::vector<std::string>& command);

// Reads the filesystem: the folder holding the build tree's package
// (`<dir of trainrun_path>/integrations/python`, if its trainrun/__init__.py
// is there), else "".
std::string build_tree_python_package(const std::string& trainrun_path);

// Adds `-x PYTHONPATH=<package_root>[:<launcher's PYTHONPATH>]` to `options`
// when the command runs Python, package_root is not empty and the user
// forwarded no PYTHONPATH of their own (theirs then stands as given).
void add_python_package(Options& options, const std::string& package_root, const char* launcher_python_path);

}  // namespace trainrun::cli
