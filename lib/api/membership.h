// What the elastic layer (State, run) needs to know about the default
// communicator that trainrun::init() made: whether the job is elastic, which
// generation this process joined and the newest one its GenerationWatcher
// has seen. Implemented in lib/init.cc, which owns both; thread-safe.
#pragma once

#include <string>

namespace trainrun::detail {

struct Membership {
  bool elastic = false;
  int worker_id = -1;
  int generation = 0;         // the generation joined (0 when not elastic)
  int newest_generation = 0;  // the newest published, as far as this process saw
};

// Of the current communicator; all zeros (not elastic) before init().
Membership membership();
// The generation this process last joined, -1 before its first; survives shutdown().
int last_joined_generation();
// shutdown() for a worker that leaves its generation to join the next:
// aborts the backend first, so that the engine stops at once instead of
// waiting for peers that are gone, and keeps the generation's watcher
// (heartbeat, partition probe) until init() joins the next generation.
void leave_generation(const std::string& cause);

}  // namespace trainrun::detail
