// ProcessSetTable: the process sets of Horovod's Python API (hvd.ProcessSet,
// add_process_set) by id: 0 is the whole job, each other id a set made with
// Communicator::subset, with its ranks and, on its members, its
// communicator (whose engine runs the set's ops). Engine handles remember
// the set that made them, so poll and synchronize find its engine.
// Every rank makes and removes the same sets in the same order, so the ids
// agree. Removing a set stops its engine: as in Horovod, its pending ops
// are aborted, and synchronize raises an error naming the removed set;
// ops that had completed keep their result until synchronized. Thread-safe (one mutex); the one instance lives as long
// as the module, and clear() stops every set before trainrun::shutdown().
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <map>
#include <unordered_map>
#include <vector>

#include "trainrun/communicator.h"
#include "trainrun/engine.h"
#include "trainrun/error.h"

namespace trainrun::python {

class ProcessSetTable {
 public:
  static ProcessSetTable& instance();

  // Collective over the job: a new set's id (the lowest free one), or
  // nullopt when a set of these ranks exists (the job itself included).
  std::optional<int> add(const std::vector<int>& ranks);
  // Collective over the set's members: false for 0 and unknown ids.
  // Unsynchronized handles of the set outlive it (take_removed).
  bool remove(int id);
  // Stops and forgets every set (before shutdown).
  void clear();

  std::vector<int> ids();
  std::vector<int> ranks(int id);
  // This rank's communicator for set `id`; Error(InvalidArgument) with
  // Horovod's text when the set is unknown or this rank is not in it
  // ("<op>: Rank 1 is not a member of the provided process set.").
  Communicator& communicator(int id, const char* op);
  bool includes(int id);

  // Engine handles: which set made each, until it is synchronized.
  void remember(std::uint64_t handle, int id);
  Communicator& owner(std::uint64_t handle, bool forget);
  // A handle of a set removed before the handle was synchronized (poll:
  // done); take_removed forgets it and gives the op's output, or throws its
  // error: Error(InvalidArgument) naming the set when the removal aborted
  // it. nullopt for every other handle.
  bool removed(std::uint64_t handle);
  std::optional<Output> take_removed(std::uint64_t handle);

 private:
  struct Set {
    std::vector<int> ranks;
    std::unique_ptr<Communicator> communicator;  // null on ranks outside the set
  };
  // What synchronize gives for a handle of a removed set.
  struct Orphan {
    std::optional<Output> output;
    std::optional<Error> error;
  };
  const Set& find(int id);  // under mutex_
  // The orphans of a removed set's handles, from its communicator (null on
  // ranks outside it) before it goes.
  static std::unordered_map<std::uint64_t, Orphan> settle(Communicator* gone, const std::vector<std::uint64_t>& handles,
                                                          const Set& set, int id);

  std::mutex mutex_;
  std::map<int, Set> sets_;
  std::unordered_map<std::uint64_t, int> handles_;
  std::unordered_map<std::uint64_t, Orphan> removed_;
};

}  // namespace trainrun::python
