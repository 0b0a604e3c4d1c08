// Starting a child process: the one fork/exec of the launcher and its
// agents. A SpawnRequest says what the child runs and how it is set up
// (standard descriptors, process group, signal mask, parent-death signal,
// CPU binding, directory); spawn() creates the pipes asked for, forks,
// execs and hands back the pid with the launcher's ends of the pipes, owned.
// Every failure in the launcher (pipe2, fork, and with ExecFailure::Report
// also exec) is returned as an errno and the step that failed; nothing is
// left open or unreaped. Stateless; the forked child runs only
// async-signal-safe calls (everything it needs is built before fork), so
// spawn() may be called from any thread.
#pragma once

#include <sched.h>
#include <signal.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "os/unique_fd.h"

namespace trainrun::cli {

// The launcher's environment as "NAME=value" strings (a copy of environ).
std::vector<std::string> current_environment();

// In a freshly forked child, after it set up stdin/stdout/stderr: closes
// every other descriptor, so that no socket, pipe or file of trainrun's
// (the rendezvous listener, another rank's pipes) leaks into what it execs,
// whether or not its opener remembered O_CLOEXEC. Async-signal-safe.
void close_inherited_descriptors();

// What one of the child's standard descriptors (0, 1, 2) becomes.
struct ChildStream {
  enum class Kind { Inherit, Null, Pipe, Fd };
  Kind kind = Kind::Inherit;
  int fd = -1;  // Kind::Fd: this descriptor, dup'ed (the caller keeps owning it)

  static ChildStream inherit() { return {}; }
  static ChildStream null() { return {Kind::Null, -1}; }    // /dev/null
  static ChildStream pipe() { return {Kind::Pipe, -1}; }    // a new pipe; its other end comes back
  static ChildStream of(int fd) { return {Kind::Fd, fd}; }  // fd < 0: inherit
};

enum class ChildGroup {
  Inherit,     // the launcher's process group
  Own,         // setpgid(0, 0): killpg(pid) reaches what it starts; the terminal's Ctrl-C does too
  NewSession,  // setsid(): also without the launcher's terminal, so a Ctrl-C meant
               // for the launcher does not reach it
};

enum class ExecFailure {
  // spawn() reports exec's errno (step "exec") and reaps the child: for
  // callers that must tell "cannot be executed" from the program's own 127.
  Report,
  // The child prints "trainrun: cannot execute ARGV0: why" on its stderr and
  // exits 127.
  Exit127,
  // As Exit127, but like a shell: 127 when the program is missing, else 126.
  ExitLikeShell,
};

struct SpawnRequest {
  std::string program;            // the path exec'ed; with search_path, a name looked up in PATH
  std::vector<std::string> argv;  // argv[0] first
  std::vector<std::string> env;   // exactly the child's environment ("NAME=value")
  bool search_path = false;       // execvp: PATH is read from `env`
  ChildStream in, out, err;
  ChildGroup group = ChildGroup::Inherit;
  // The child's signal mask (what the launcher had before it blocked the
  // signals it reads from a signalfd); unset: nothing blocked.
  std::optional<sigset_t> mask;
  // SIGPIPE back to its default: the launcher ignores it, exec keeps an
  // ignored signal ignored, and a shell script's "cmd | head -1" would then
  // print "Broken pipe" errors instead of ending quietly.
  bool default_sigpipe = false;
  // SIGKILL when the launcher dies (PR_SET_PDEATHSIG); a launcher that died
  // before that took effect makes the child exit 127 at once.
  bool die_with_parent = false;
  pid_t ptracer = 0;  // > 0: this process may ptrace it (Yama), e.g. for eu-stack
  // Bound to these CPUs; `cpus_text` names them in the warning printed
  // (on the child's stderr) when the kernel refuses.
  std::optional<cpu_set_t> cpus;
  std::string cpus_text;
  // Entered before exec; failing, it prints "trainrun: cannot enter
  // directory D: why" and exits 126.
  std::string cwd;
  ExecFailure on_exec_failure = ExecFailure::Report;
};

struct Subprocess {
  pid_t pid = -1;         // > 0: running; else it was never started (and nothing is left to reap)
  int error = 0;          // errno of the failed step when pid <= 0
  const char* step = "";  // which: "pipe2", "open /dev/null", "fork" or "exec"
  // The launcher's ends of the ChildStream::pipe()s: write to `in`, read
  // `out` and `err`. Invalid for the others.
  UniqueFd in, out, err;

  bool started() const { return pid > 0; }
};

Subprocess spawn(const SpawnRequest& request);

}  // namespace trainrun::cli
