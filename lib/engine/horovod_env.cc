#include "lib/engine/horovod_env.h"

#include <cstring>
#include <utility>

#include "contract/environment.h"

namespace trainrun::detail {
namespace {

// Same units on both sides: bytes, milliseconds, entries, a path, 0/1, seconds.
struct Alias {
  const char* ours;
  const char* horovods;
};
constexpr Alias kAliases[] = {
    {contract::kEnvFusionThreshold, "HOROVOD_FUSION_THRESHOLD"},
    {contract::kEnvCycleTimeMs, "HOROVOD_CYCLE_TIME"},
    {contract::kEnvCacheCapacity, "HOROVOD_CACHE_CAPACITY"},
    {contract::kEnvTimeline, "HOROVOD_TIMELINE"},
    {contract::kEnvTimelineMarkCycles, "HOROVOD_TIMELINE_MARK_CYCLES"},
    {contract::kEnvStallWarning, "HOROVOD_STALL_CHECK_TIME_SECONDS"},
    {contract::kEnvStallShutdown, "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS"},
};

const char* horovod_value(const EnvLookup& env, const char* ours) {
  if (std::strcmp(ours, contract::kEnvStallWarning) == 0) {
    const char* disable = env("HOROVOD_STALL_CHECK_DISABLE");
    if (disable != nullptr && std::strcmp(disable, "1") == 0) return "0";
  }
  for (const Alias& a : kAliases) {
    if (std::strcmp(a.ours, ours) != 0) continue;
    const char* value = env(a.horovods);
    // HOROVOD_TIMELINE=DYNAMIC: Horovod's "started later by start_timeline()".
    if (value != nullptr && a.ours == contract::kEnvTimeline && std::strcmp(value, "DYNAMIC") == 0) return nullptr;
    return value;
  }
  return nullptr;
}

}  // namespace

EnvLookup with_horovod_names(EnvLookup env) {
  return [env = std::move(env)](const char* name) -> const char* {
    if (const char* ours = env(name)) return ours;
    return horovod_value(env, name);
  };
}

}  // namespace trainrun::detail
