// Horovod's names for the engine's settings (HOROVOD_FUSION_THRESHOLD,
// HOROVOD_CYCLE_TIME, ...): a lookup that answers trainrun's name with the
// Horovod variable when trainrun's own is unset, so a Horovod user's
// environment keeps working and ours wins when both are set. Pure given
// `env`; the returned lookup holds a copy of it.
#pragma once

#include "contract/world.h"

namespace trainrun::detail {

EnvLookup with_horovod_names(EnvLookup env);

}  // namespace trainrun::detail
