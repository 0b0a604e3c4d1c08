// What the elastic layer (State, run) needs to know about the default
// communicator that trainrun::init() made: whether the job is elastic, which
// generation this process joined and the newest one its GenerationWatcher
// has seen. Implemented in lib/init.cc, which owns both; thread-safe.
#pragma once

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
// Aborts the current communicator's backend, if any, so that its engine
// stops at once and shutdown() does not wait for peers that are gone.
void abort_current_backend() noexcept;

}  // namespace trainrun::detail
