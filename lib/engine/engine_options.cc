#include "lib/engine/engine_options.h"

#include "contract/environment.h"
#include "lib/engine/horovod_env.h"

namespace trainrun::detail {

EngineOptions engine_options_from_env(const EnvLookup& own) {
  namespace p = contract;
  const EnvLookup env = with_horovod_names(own);
  EngineOptions o;
  if (auto v = env_int(env, p::kEnvFusionThreshold, 0, 1ll << 40)) o.fusion_threshold = *v;
  if (auto v = env_number(env, p::kEnvCycleTimeMs, 0.01, 60'000)) o.cycle_time = decltype(o.cycle_time)(*v);
  if (auto v = env_int(env, p::kEnvCacheCapacity, 0, 1 << 20)) o.cache_capacity = *v;
  if (const char* path = env(p::kEnvTimeline)) o.timeline_path = path;
  if (auto v = env_int(env, p::kEnvTimelineMarkCycles, 0, 1)) o.timeline_mark_cycles = *v == 1;
  if (auto v = env_number(env, p::kEnvStallWarning, 0, 30 * 86400)) o.stall_warning = decltype(o.stall_warning)(*v);
  if (auto v = env_number(env, p::kEnvStallShutdown, 0, 30 * 86400)) o.stall_shutdown = decltype(o.stall_shutdown)(*v);
  if (auto v = env_number(env, p::kEnvStragglerWarning, 0, 100)) o.straggler_warning_pct = *v;
  if (auto v = env_int(env, p::kEnvStragglerWindow, 1, 1 << 20)) o.straggler_window = *v;
  return o;
}

}  // namespace trainrun::detail
