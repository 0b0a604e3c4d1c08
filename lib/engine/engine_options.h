// EngineOptions: the engine's settings, read from the environment the
// launcher sets (contract/environment.h: TRAINRUN_FUSION_THRESHOLD, ...), or
// Horovod's names for them when ours are unset (horovod_env.h).
// Plain value type; engine_options_from_env is pure given `env`.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "contract/world.h"

namespace trainrun::detail {

struct EngineOptions {
  std::size_t fusion_threshold = 64u << 20;  // bytes; 0: no fusion
  std::chrono::duration<double, std::milli> cycle_time{1.0};
  std::size_t cache_capacity = 1024;                  // 0: no response cache
  std::string timeline_path;                          // empty: no timeline
  bool timeline_mark_cycles = false;                  // CYCLE_START marks in it
  std::chrono::duration<double> stall_warning{60.0};  // 0: off
  std::chrono::duration<double> stall_shutdown{0.0};  // 0: off
  double straggler_warning_pct = 0;                   // 0: off (statistics are kept anyway)
  std::size_t straggler_window = 500;                 // cycles
};

// Throws Error(InvalidArgument) naming the variable and its value.
EngineOptions engine_options_from_env(const EnvLookup& env);

}  // namespace trainrun::detail
