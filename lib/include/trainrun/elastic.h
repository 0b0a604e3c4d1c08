// Elastic training (trainrun --min-np/--max-np, see trainrun(1)): the job
// goes on when ranks die or hosts come and go. Modelled on hvd.elastic:
//
//   trainrun::elastic::State state;
//   state.add_value("epoch", epoch);
//   state.add("model", save_model, load_model);
//   trainrun::elastic::run(state, [&] {
//     for (; epoch < epochs; ++epoch) {
//       train_one_epoch();
//       state.commit();          // a consistent point to come back to
//     }
//   });
//
// When a member is lost, collectives fail (Error of code Io, Timeout,
// Backend or MembershipChanged); run() restores the last commit, re-forms
// the world with the launcher's next generation, synchronizes the state
// from a surviving rank and calls the function again (it sees the new
// size()). When workers are added, the next commit() throws HostsUpdated on
// every rank at once and run() re-forms without restoring.
// Without TRAINRUN_ELASTIC=1 (a plain launch) run() is init + sync + fn.
// A State is used from one thread, the one that runs the training loop.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "trainrun/error.h"

namespace trainrun::elastic {

// The launcher published a new generation (workers were added or removed):
// thrown by State::commit() on every rank alike. Code MembershipChanged.
class HostsUpdated : public Error {
 public:
  explicit HostsUpdated(const std::string& message) : Error(Code::MembershipChanged, message) {}
};

// The training state that survives a change of membership: named parts,
// each saved to bytes and loaded from them.
class State {
 public:
  using Save = std::function<std::string()>;
  using Load = std::function<void(const std::string&)>;

  // Names must be unique; every rank adds the same parts in the same order.
  void add(std::string name, Save save, Load load);
  // A trivially copyable value, saved as its bytes; `value` must outlive the State.
  template <class T>
  void add_value(std::string name, T& value) {
    static_assert(std::is_trivially_copyable_v<T>, "add_value takes trivially copyable values; use add()");
    const std::string label = name;  // for the load's error; `name` is moved below
    add(
        std::move(name), [&value] { return std::string(reinterpret_cast<const char*>(&value), sizeof(T)); },
        [&value, label](const std::string& bytes) {
          check_size(label, bytes.size(), sizeof(T));
          std::memcpy(&value, bytes.data(), sizeof(T));
        });
  }

  // Keeps every part's save() in memory as the point to restore, then
  // (elastic jobs) one allreduce tells whether any rank saw a newer
  // generation: if so every rank throws HostsUpdated. Collective.
  void commit();
  // Loads the last commit (or sync) into every part; nothing before one.
  void restore();
  // Makes every rank hold the same state: the lowest rank that has a commit
  // broadcasts it (rank 0's current state when none has), every rank loads
  // it and keeps it as its commit. Collective.
  void sync();
  std::uint64_t commits() const { return commits_; }
  // Called by run() after each re-form, once the state is synchronized
  // (rebuild what depends on the size: samplers, optimizers, learning rate).
  void on_reset(std::function<void()> callback);
  // Whether a commit (or sync) has been made: restore() has something to load.
  bool has_snapshot() const { return has_snapshot_; }

 private:
  // run() calls the on_reset callbacks, in the order they were added, after a re-form.
  friend void run(State& state, const std::function<void()>& fn);
  void reset() const;

  struct Part {
    std::string name;
    Save save;
    Load load;
  };
  static void check_size(const std::string& name, std::size_t got, std::size_t want);
  std::vector<std::string> save_all() const;
  void load_all(const std::vector<std::string>& bytes) const;

  std::vector<Part> parts_;
  std::vector<std::string> snapshot_;  // one entry per part
  bool has_snapshot_ = false;
  std::uint64_t commits_ = 0;
  std::vector<std::function<void()>> on_reset_;
};

// init(), state.sync(), fn(); in an elastic job, recovers from the errors
// above by restoring, re-forming (trainrun::shutdown() then init(), which
// waits for the launcher's next generation) and calling fn again. Throws
// what it cannot recover from, or Error(Timeout) when no new generation
// invites this worker (quoting the error that started the re-form).
void run(State& state, const std::function<void()>& fn);

// Whether this process runs in an elastic job (TRAINRUN_ELASTIC=1).
bool enabled();
// The generation the current communicator belongs to (0 when not elastic).
int generation();

}  // namespace trainrun::elastic
