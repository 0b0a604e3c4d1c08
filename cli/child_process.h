// Starting the processes a launcher runs itself: fork/exec with the
// launcher's blocked signals restored and the child tied to the launcher's
// life (exit statuses are judged in cli/job_state.h). Stateless; call from the
// launcher's supervising thread.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace trainrun::cli {

// Forks and execs `program` with `argv` and exactly `env` ("NAME=value").
// The child gets `original_mask` back, dies with SIGKILL when the launcher
// dies, and, with `own_group`, leads its own process group (so that a
// teardown signal reaches whatever it starts). If exec fails the child
// prints "trainrun: cannot execute ..." and exits 127.
// In a freshly forked child, after it set up stdin/stdout/stderr: closes
// every other descriptor, so that no socket, pipe or file of trainrun's
// (the rendezvous listener, another rank's pipes) leaks into what it execs,
// whether or not its opener remembered O_CLOEXEC. Async-signal-safe.
void close_inherited_descriptors();

pid_t spawn_child(const std::string& program, const std::vector<std::string>& argv,
                  const std::vector<std::string>& env, const sigset_t& original_mask, bool own_group);

}  // namespace trainrun::cli
