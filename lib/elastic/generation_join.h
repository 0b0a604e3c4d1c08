// How an elastic worker finds the generation it belongs to (docs/design.md §5.4,
// contract/elastic_protocol.h): the newest generation the launcher named,
// or the first one after those this process already joined, whichever is
// later; a generation that does not list the worker is skipped and the next
// one awaited. Pure logic over a Store, so tests drive it with a fake.
#pragma once

#include "contract/world.h"
#include "contract/elastic_protocol.h"
#include "rendezvous/store.h"

namespace trainrun::detail {

// Waits (up to world.elastic_timeout in all) for a generation >= `first`
// whose assignment lists world.worker_id, then sets world's rank, size,
// local and cross ranks and generation from its slot and returns the
// assignment. Throws Error(Timeout) "worker W was not invited to a
// generation after G within S s" (G = first - 1), Error(Internal) when an
// assignment or the generation number is malformed; other store errors
// pass through.
elastic_protocol::Assignment join_generation(rendezvous::Store& store, World& world, int first);

// Sets world's place in the job from `slot` of the assignment of `generation`.
void apply_slot(World& world, const elastic_protocol::Slot& slot, int size, int generation);

}  // namespace trainrun::detail
