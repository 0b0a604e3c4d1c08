// The path of the running trainrun binary: what agents are started from and
// where a build tree's Python package is found. Reads /proc/self/exe.
#pragma once

#include <string>

namespace trainrun::cli {

// Throws Error(Internal) if /proc/self/exe cannot be read.
std::string self_executable();

}  // namespace trainrun::cli
