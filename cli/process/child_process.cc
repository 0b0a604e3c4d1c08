#include "cli/process/child_process.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace trainrun::cli {
namespace {

// execve's argument arrays; built before fork, since the child may not allocate.
struct ExecArgs {
  std::vector<char*> argv, envp;
  ExecArgs(const std::vector<std::string>& args, const std::vector<std::string>& env) {
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
  }
};

// The forked child's side, up to the exec; returns only when the exec failed
// (errno says why). `keep_fd` (-1: none) survives the descriptor sweep.
void prepare_and_exec(const std::string& program, ExecArgs& args, const sigset_t& original_mask,
                      pid_t parent, bool own_group, const ChildSetup& setup, int keep_fd) {
  if (setup.new_session) {
    ::setsid();
  } else if (own_group) {
    ::setpgid(0, 0);
  }
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);  // the launcher died before prctl
  ::sigprocmask(SIG_SETMASK, &original_mask, nullptr);
  if (setup.default_sigpipe) {
    struct sigaction action {};
    action.sa_handler = SIG_DFL;
    ::sigaction(SIGPIPE, &action, nullptr);
  }
  const int stdio[3] = {setup.stdin_fd, setup.stdout_fd, setup.stderr_fd};
  for (int target = 0; target < 3; ++target) {
    if (stdio[target] >= 0) ::dup2(stdio[target], target);
  }
  if (keep_fd < 0) {
    close_inherited_descriptors();
  } else {
    if (keep_fd > STDERR_FILENO + 1) ::close_range(STDERR_FILENO + 1, static_cast<unsigned>(keep_fd) - 1, 0);
    ::close_range(static_cast<unsigned>(keep_fd) + 1, ~0U, 0);
  }
  ::execve(program.c_str(), args.argv.data(), args.envp.data());
}

}  // namespace

void close_inherited_descriptors() { ::close_range(STDERR_FILENO + 1, ~0U, 0); }

pid_t spawn_child(const std::string& program, const std::vector<std::string>& argv,
                  const std::vector<std::string>& env, const sigset_t& original_mask, bool own_group) {
  ExecArgs args(argv, env);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  prepare_and_exec(program, args, original_mask, parent, own_group, ChildSetup{}, -1);
  const std::string message = "trainrun: cannot execute " + program + ": " + std::strerror(errno) + "\n";
  (void)!::write(STDERR_FILENO, message.data(), message.size());
  ::_exit(127);
}

SpawnResult spawn_checked(const std::string& program, const std::vector<std::string>& argv,
                          const std::vector<std::string>& env, const sigset_t& original_mask,
                          const ChildSetup& setup) {
  ExecArgs args(argv, env);
  // The child writes exec's errno here; a successful exec closes it (CLOEXEC)
  // unwritten, so EOF with no bytes means the program is running.
  int status[2];
  if (::pipe2(status, O_CLOEXEC) != 0) return {-1, errno};
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(status[0]);
    prepare_and_exec(program, args, original_mask, parent, false, setup, status[1]);
    const int error = errno;
    (void)!::write(status[1], &error, sizeof error);
    ::_exit(127);
  }
  const int fork_error = errno;
  ::close(status[1]);
  if (pid < 0) {
    ::close(status[0]);
    return {-1, fork_error};
  }
  int error = 0;
  ssize_t n;
  do {
    n = ::read(status[0], &error, sizeof error);
  } while (n < 0 && errno == EINTR);
  ::close(status[0]);
  if (n != static_cast<ssize_t>(sizeof error)) return {pid, 0};
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  return {-1, error};
}

}  // namespace trainrun::cli
