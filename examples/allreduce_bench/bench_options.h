// allreduce_bench's command line, parsed with CLI11 (as trainrun itself
// does): `--help` prints the usage, a bad value is one line on stderr and
// exit status 2. The spellings are those of bench::parse_args
// (bench_harness.h), which the baseline benchmarks in tests/bench share.
#pragma once

#include <optional>

#include "bench_harness.h"

namespace bench {

// The config, or the exit status to end with: 0 after --help, 2 after a usage error.
std::optional<Config> parse_options(int argc, char** argv, int& exit_code);

}  // namespace bench
