// Umbrella header: everything a training program needs.
#pragma once

#include "trainrun/communicator.h"
#include "trainrun/elastic.h"
#include "trainrun/engine.h"
#include "trainrun/error.h"
#include "trainrun/half.h"
#include "trainrun/sampler.h"
#include "trainrun/types.h"
#include "trainrun/version.h"
