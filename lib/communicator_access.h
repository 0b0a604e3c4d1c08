// detail::CommunicatorAccess: the library's own way into a Communicator,
// whose public header (trainrun/communicator.h) shows only the user's API.
// init() makes the process's communicator here; the engine API and the
// elastic layer reach its backend and its engine. Stateless; thread safety
// as documented per function.
#pragma once

#include <memory>
#include <string>

#include "trainrun/communicator.h"

namespace trainrun::detail {

class Backend;
class Engine;
struct World;

class CommunicatorAccess {
 public:
  static std::unique_ptr<Communicator> make(std::unique_ptr<World> world, std::unique_ptr<Backend> backend);
  // The backend behind the communicator: it routes host and CUDA buffers as
  // the core calls do (backends/routed_backend.h). Lives as long as `comm`.
  static Backend& backend(Communicator& comm);
  // The coordination engine, started on first use (thread-safe).
  static Engine& engine(Communicator& comm);
  // The job's timeline at run time, without starting the engine
  // (trainrun/engine.h: start_timeline, stop_timeline).
  static void start_timeline(Communicator& comm, const std::string& path, bool mark_cycles);
  static void stop_timeline(Communicator& comm);
  // A process set's id in Horovod's Python API, which the engine's messages
  // name the set by (World::set_id); before its engine starts.
  static void set_process_set_id(Communicator& comm, int id);
};

}  // namespace trainrun::detail
