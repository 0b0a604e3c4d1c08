#include "cli/child_process.h"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace trainrun::cli {

void close_inherited_descriptors() { ::close_range(STDERR_FILENO + 1, ~0U, 0); }

pid_t spawn_child(const std::string& program, const std::vector<std::string>& argv,
                  const std::vector<std::string>& env, const sigset_t& original_mask, bool own_group) {
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  if (own_group) ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);  // the launcher died before prctl
  ::sigprocmask(SIG_SETMASK, &original_mask, nullptr);
  close_inherited_descriptors();
  ::execve(program.c_str(), args.data(), envp.data());
  const std::string message = "trainrun: cannot execute " + program + ": " + std::strerror(errno) + "\n";
  (void)!::write(STDERR_FILENO, message.data(), message.size());
  ::_exit(127);
}

}  // namespace trainrun::cli
