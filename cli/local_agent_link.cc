#include "cli/local_agent_link.h"
#include "cli/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <thread>

#include "trainrun/error.h"

namespace trainrun::cli {

std::string self_executable() {
  char path[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) throw Error(Error::Code::Internal, "cannot find trainrun's own executable");
  return std::string(path, static_cast<std::size_t>(n));
}

LocalAgentLink::LocalAgentLink(std::string host) : host_(std::move(host)) {
  const std::string exe = self_executable();
  int to[2], from[2];
  if (::pipe2(to, O_CLOEXEC) != 0 || ::pipe2(from, O_CLOEXEC) != 0) {
    throw Error(Error::Code::Io, std::string("cannot create the agent's pipes: ") + std::strerror(errno));
  }
  sigset_t all;
  sigfillset(&all);
  pid_ = ::fork();
  if (pid_ == 0) {
    // Its own process group: a Ctrl-C at the terminal reaches trainrun, which
    // decides; the agent owns its signals and must not inherit our mask.
    ::setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::dup2(to[0], 0);
    ::dup2(from[1], 1);
    close_inherited_descriptors();
    const char* argv[] = {exe.c_str(), "agent", nullptr};
    ::execv(exe.c_str(), const_cast<char* const*>(argv));
    ::_exit(127);
  }
  ::close(to[0]);
  ::close(from[1]);
  if (pid_ < 0) {
    ::close(to[1]);
    ::close(from[0]);
    throw Error(Error::Code::Io, std::string("cannot start the local agent: ") + std::strerror(errno));
  }
  to_agent_ = to[1];
  from_agent_ = from[0];
  for (int fd : {to_agent_, from_agent_}) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

LocalAgentLink::~LocalAgentLink() {
  close_write();
  if (!reaped_ && pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (from_agent_ >= 0) ::close(from_agent_);
}

void LocalAgentLink::close_write() {
  if (to_agent_ >= 0) ::close(to_agent_);
  to_agent_ = -1;
}

std::optional<std::string> LocalAgentLink::failure() {
  if (!reaped_ && ::waitpid(pid_, &status_, WNOHANG) == pid_) reaped_ = true;
  if (!reaped_) return std::nullopt;
  if (WIFSIGNALED(status_)) {
    return "the agent on " + host_ + " was killed by signal " + std::to_string(WTERMSIG(status_));
  }
  if (WEXITSTATUS(status_) != 0) {
    return "the agent on " + host_ + " exited with code " + std::to_string(WEXITSTATUS(status_));
  }
  return std::nullopt;
}

void LocalAgentLink::finish(std::chrono::milliseconds timeout) {
  close_write();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!reaped_) {
    if (::waitpid(pid_, &status_, WNOHANG) == pid_) {
      reaped_ = true;
    } else if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status_, 0);
      reaped_ = true;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
}

}  // namespace trainrun::cli
