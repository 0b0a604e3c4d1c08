// Starting the processes a launcher runs itself: fork/exec with the
// launcher's blocked signals restored and the child tied to the launcher's
// life (exit statuses are judged in cli/job/job_state.h). Stateless; call from the
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

// How a child started by spawn_checked() is set up before exec.
struct ChildSetup {
  int stdin_fd = -1, stdout_fd = -1, stderr_fd = -1;  // become its 0, 1, 2; -1: inherited
  // setsid(): its own session and process group, without the launcher's
  // terminal, so that killpg(pid) reaches all it started and a Ctrl-C
  // meant for the launcher does not.
  bool new_session = false;
  // SIGPIPE back to its default: the launcher ignores it, exec keeps an
  // ignored signal ignored, and a shell script's "cmd | head -1" would then
  // print "Broken pipe" errors instead of ending quietly.
  bool default_sigpipe = false;
};

struct SpawnResult {
  pid_t pid = -1;  // > 0: running; else it was never started (and nothing is left to reap)
  int error = 0;   // errno of the failed fork or exec when pid <= 0
};

// spawn_child(), for callers that must tell "cannot be executed" from the
// program's own exit code 127: an exec failure comes back as its errno
// (the child is reaped here) instead of a message on the child's stderr.
SpawnResult spawn_checked(const std::string& program, const std::vector<std::string>& argv,
                          const std::vector<std::string>& env, const sigset_t& original_mask,
                          const ChildSetup& setup);

}  // namespace trainrun::cli
