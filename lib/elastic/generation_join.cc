#include "lib/elastic/generation_join.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <string>

#include "trainrun/error.h"

namespace trainrun::detail {
namespace {

namespace ep = elastic_protocol;
using Clock = std::chrono::steady_clock;

int parse_generation(const std::string& text) {
  int g = -1;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), g);
  if (text.empty() || r.ec != std::errc() || r.ptr != text.data() + text.size() || g < 0) {
    throw Error(Error::Code::Internal, "the rendezvous names a malformed elastic generation '" + text + "'");
  }
  return g;
}

[[noreturn]] void not_invited(const World& world, int first) {
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(world.elastic_timeout).count();
  throw Error(Error::Code::Timeout, "worker " + std::to_string(world.worker_id) +
                                        " was not invited to a generation after " + std::to_string(first - 1) +
                                        " within " + std::to_string(seconds) + " s");
}

// The store's own Timeout is the invitation's: every wait shares one deadline.
std::string get_before(rendezvous::Store& store, std::string_view key, Clock::time_point deadline, const World& world,
                       int first) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) not_invited(world, first);
  try {
    return store.get(ep::kScope, key, left);
  } catch (const Error& e) {
    if (e.code() == Error::Code::Timeout) not_invited(world, first);
    throw;
  }
}

}  // namespace

void apply_slot(World& world, const ep::Slot& slot, int size, int generation) {
  world.rank = slot.rank;
  world.size = size;
  world.local_rank = slot.local_rank;
  world.local_size = slot.local_size;
  world.cross_rank = slot.cross_rank;
  world.cross_size = slot.cross_size;
  world.generation = generation;
}

ep::Assignment join_generation(rendezvous::Store& store, World& world, int first) {
  const auto deadline = Clock::now() + world.elastic_timeout;
  const int newest = parse_generation(get_before(store, ep::kKeyGeneration, deadline, world, first));
  for (int g = std::max(newest, first);; ++g) {
    const std::string text = get_before(store, ep::assignment_key(g), deadline, world, first);
    std::optional<ep::Assignment> assignment = ep::decode_assignment(text);
    if (!assignment || assignment->generation != g) {
      throw Error(Error::Code::Internal, "the assignment of elastic generation " + std::to_string(g) + " is malformed");
    }
    if (const ep::Slot* slot = assignment->find(world.worker_id)) {
      apply_slot(world, *slot, assignment->size(), g);
      return *std::move(assignment);
    }
  }
}

}  // namespace trainrun::detail
