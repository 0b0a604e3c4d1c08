// Work: one operation in flight on this rank, from submission until its
// handle completes; Operation: what the submitting thread waits on. A Work
// belongs to the engine thread once submitted; an Operation is shared with
// the handle table and guarded by the engine's mutex (the engine thread
// fills `output` before it sets `done` under that mutex).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "lib/engine/request.h"
#include "trainrun/engine.h"
#include "trainrun/error.h"

namespace trainrun::detail {

struct Operation {
  bool done = false;
  int waiters = 0;  // callers blocked on it; the engine counts them off when it is done
  std::optional<Error> error;
  Output output;
  int last_joined = -1;  // join()
  // The names it holds on this rank (engine.cc: reserved_names); they stay
  // taken until its handle is synchronized, not merely until it completes.
  std::vector<std::string> names;
};

struct Work {
  Request request;
  std::vector<void*> data;           // one per tensor (per member of a group)
  std::vector<std::int64_t> splits;  // alltoall: rows to each rank
  std::function<void()> core;        // Core: the Communicator call to run
  std::shared_ptr<Operation> op;
  std::chrono::steady_clock::time_point submitted;
  std::optional<std::size_t> cache_slot;  // waiting on this response-cache hit
};

}  // namespace trainrun::detail
