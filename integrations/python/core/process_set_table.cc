#include "integrations/python/core/process_set_table.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "lib/communicator_access.h"
#include "lib/engine/rank_names.h"
#include "trainrun/error.h"

namespace trainrun::python {
namespace {

[[noreturn]] void invalid(const std::string& message) { throw Error(Error::Code::InvalidArgument, message); }

Communicator& world() {
  if (!is_initialized()) invalid("trainrun has not been initialized; call trainrun.torch.init() first");
  return init();
}

}  // namespace

ProcessSetTable& ProcessSetTable::instance() {
  static ProcessSetTable* table = new ProcessSetTable;  // never destroyed: used at exit
  return *table;
}

std::optional<int> ProcessSetTable::add(const std::vector<int>& requested) {
  Communicator& job = world();
  std::vector<int> ranks = requested;
  std::sort(ranks.begin(), ranks.end());
  std::vector<int> everyone(static_cast<std::size_t>(job.size()));
  std::iota(everyone.begin(), everyone.end(), 0);
  if (ranks == everyone) return std::nullopt;
  {
    std::lock_guard lock(mutex_);
    for (const auto& entry : sets_) {
      if (entry.second.ranks == ranks) return std::nullopt;
    }
  }
  // Outside the lock: the job's ranks may wait for each other here.
  std::unique_ptr<Communicator> communicator = job.subset(ranks);
  std::lock_guard lock(mutex_);
  int id = 1;
  while (sets_.count(id)) ++id;
  if (communicator) detail::CommunicatorAccess::set_process_set_id(*communicator, id);
  sets_.emplace(id, Set{ranks, std::move(communicator)});
  return id;
}

bool ProcessSetTable::remove(int id) {
  Set gone;
  std::vector<std::uint64_t> handles;
  {
    std::lock_guard lock(mutex_);
    const auto it = sets_.find(id);
    if (it == sets_.end()) return false;
    gone = std::move(it->second);
    sets_.erase(it);
    for (auto h = handles_.begin(); h != handles_.end();) {
      if (h->second == id) handles.push_back(h->first);
      h = h->second == id ? handles_.erase(h) : std::next(h);
    }
  }
  // Outside the lock: stopping the set's engine waits for its members.
  auto orphans = settle(gone.communicator.get(), handles, gone, id);
  gone.communicator.reset();
  std::lock_guard lock(mutex_);
  removed_.merge(orphans);
  return true;
}

// Completed ops keep their result; the others are aborted when the engine
// stops, as Horovod aborts a removed set's queue ("Process set has been
// removed"). An op that completes between its poll and the stop counts as
// aborted: its caller removed the set before knowing; so does one that a
// member's earlier removal failed.
std::unordered_map<std::uint64_t, ProcessSetTable::Orphan> ProcessSetTable::settle(
    Communicator* gone, const std::vector<std::uint64_t>& handles, const Set& set, int id) {
  detail::World world;
  world.members = set.ranks;
  world.set_id = id;
  const Error aborted(Error::Code::InvalidArgument,
                      detail::RankNames(world).set() +
                          " was removed (remove_process_set) while this op was pending, so the op was aborted "
                          "(synchronize a set's handles before removing it)");
  std::unordered_map<std::uint64_t, Orphan> orphans;
  for (std::uint64_t h : handles) {
    Orphan& orphan = orphans[h];
    orphan.error = aborted;
    if (!gone || !poll(*gone, Handle{h})) continue;
    try {
      orphan.output = synchronize(*gone, Handle{h});
      orphan.error.reset();
    } catch (const Error& e) {
      // A member that removed the set first stopped the set's engine, which
      // fails the op as shut down (InvalidArgument): that is this removal.
      if (e.code() != Error::Code::InvalidArgument) orphan.error = e;
    }
  }
  return orphans;
}

void ProcessSetTable::clear() {
  std::map<int, Set> gone;
  {
    std::lock_guard lock(mutex_);
    gone.swap(sets_);
    handles_.clear();
    removed_.clear();
  }
}

std::vector<int> ProcessSetTable::ids() {
  std::lock_guard lock(mutex_);
  std::vector<int> ids{0};
  for (const auto& entry : sets_) ids.push_back(entry.first);
  return ids;
}

const ProcessSetTable::Set& ProcessSetTable::find(int id) {
  const auto it = sets_.find(id);
  if (it == sets_.end()) invalid("Process set does not exist or has not been registered.");
  return it->second;
}

std::vector<int> ProcessSetTable::ranks(int id) {
  if (id == 0) {
    std::vector<int> everyone(static_cast<std::size_t>(world().size()));
    std::iota(everyone.begin(), everyone.end(), 0);
    return everyone;
  }
  std::lock_guard lock(mutex_);
  return find(id).ranks;
}

Communicator& ProcessSetTable::communicator(int id, const char* op) {
  if (id == 0) return world();
  Communicator& job = world();
  std::lock_guard lock(mutex_);
  const Set& set = find(id);
  if (!set.communicator) {
    invalid(std::string(op) + ": Rank " + std::to_string(job.rank()) + " is not a member of the provided process set.");
  }
  return *set.communicator;
}

bool ProcessSetTable::includes(int id) {
  if (id == 0) return true;
  std::lock_guard lock(mutex_);
  return find(id).communicator != nullptr;
}

void ProcessSetTable::remember(std::uint64_t handle, int id) {
  if (id == 0) return;
  std::lock_guard lock(mutex_);
  handles_[handle] = id;
}

Communicator& ProcessSetTable::owner(std::uint64_t handle, bool forget) {
  int id = 0;
  {
    std::lock_guard lock(mutex_);
    const auto it = handles_.find(handle);
    if (it != handles_.end()) {
      id = it->second;
      if (forget) handles_.erase(it);
    }
  }
  return communicator(id, "synchronize");
}

bool ProcessSetTable::removed(std::uint64_t handle) {
  std::lock_guard lock(mutex_);
  return removed_.count(handle) > 0;
}

std::optional<Output> ProcessSetTable::take_removed(std::uint64_t handle) {
  Orphan orphan;
  {
    std::lock_guard lock(mutex_);
    const auto it = removed_.find(handle);
    if (it == removed_.end()) return std::nullopt;
    orphan = std::move(it->second);
    removed_.erase(it);
  }
  if (orphan.error) throw *orphan.error;
  return std::move(orphan.output);
}

}  // namespace trainrun::python
