// Fork after init: a child made by fork() after trainrun::init() inherits
// the parent's connections, its shared-memory segment and its engine's
// state, but none of its threads. A collective there would join the
// parent's (shared memory), corrupt its streams (TCP) or wait for an
// engine thread that does not exist, so the child's first collective fails
// at once instead, as torch's and NCCL's do. A pthread_atfork child handler
// sets a flag: the check on every call is one load. Process-wide state
// (fork handlers carry none of their own), safe from any thread.
#pragma once

#include <atomic>

namespace trainrun::detail {

// Set in the child by the fork handler; read on every call (inline: one load).
extern std::atomic<bool> g_forked_after_init;

// init() made the default communicator as `rank` in this process; a fork
// from now on marks the child (the handler is registered once per process).
void note_initialized(int rank);
// shutdown() tore it down: a later fork shares nothing.
void note_shut_down();
// True in a process forked (at any depth) while a communicator was live.
inline bool forked_after_init() { return g_forked_after_init.load(std::memory_order_relaxed); }
// Throws Error(Unsupported) in such a process: "this process (pid 42) was
// forked from rank 1 (pid 40) after trainrun::init(); ...".
[[noreturn]] void fail_forked();

inline void check_not_forked() {
  if (forked_after_init()) fail_forked();
}

}  // namespace trainrun::detail
