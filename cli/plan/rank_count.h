// The check of a number of ranks (--np, -n, --num-proc): a whole number from
// 1 to kMaxRanks, refused in words a user understands ("'two' is not a
// number of ranks: give a whole number from 1 to 1048576"). Pure.
#pragma once

#include <CLI/CLI.hpp>

namespace trainrun::cli {

constexpr int kMaxRanks = 1 << 20;

CLI::Validator rank_count();

}  // namespace trainrun::cli
