#include "cli/agent/piped_agent_link.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

#include "cli/process/child_process.h"
#include "trainrun/error.h"

namespace trainrun::cli {
namespace {

// Both ends of one pipe, closed on scope exit unless released.
struct Pipe {
  int fd[2] = {-1, -1};
  explicit Pipe(const std::string& host) {
    if (::pipe2(fd, O_CLOEXEC) != 0) {
      throw Error(Error::Code::Io, "cannot create the pipes of the agent for " + host + ": " + std::strerror(errno));
    }
  }
  ~Pipe() {
    for (int f : fd) {
      if (f >= 0) ::close(f);
    }
  }
  int release(int end) { return std::exchange(fd[end], -1); }
};

}  // namespace

PipedAgentLink::PipedAgentLink(std::string host, const std::vector<std::string>& command, Style style)
    : host_(std::move(host)), style_(std::move(style)) {
  Pipe in(host_), out(host_);
  std::vector<char*> argv;
  for (const std::string& word : command) argv.push_back(const_cast<char*>(word.c_str()));
  argv.push_back(nullptr);
  pid_ = ::fork();
  if (pid_ == 0) {
    // Its own process group (see the class comment); it owns its signals and
    // must not inherit our mask. No parent-death signal: when trainrun dies,
    // the EOF on the child's stdin ends the agent and its ranks.
    ::setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::dup2(in.fd[0], 0);
    ::dup2(out.fd[1], 1);
    close_inherited_descriptors();
    ::execv(argv[0], argv.data());
    const std::string message = "trainrun: cannot execute " + command[0] + ": " + std::strerror(errno) + "\n";
    (void)!::write(2, message.data(), message.size());
    ::_exit(127);
  }
  if (pid_ < 0) throw Error(Error::Code::Io, "cannot start " + style_.what + " on " + host_ + ": " + std::strerror(errno));
  to_child_ = in.release(1);
  from_child_ = out.release(0);
  for (int fd : {to_child_, from_child_}) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

PipedAgentLink::~PipedAgentLink() {
  close_write();
  if (!reaped_ && pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (from_child_ >= 0) ::close(from_child_);
}

void PipedAgentLink::close_write() {
  if (to_child_ >= 0) ::close(to_child_);
  to_child_ = -1;
}

bool PipedAgentLink::reap(int options) {
  if (!reaped_ && ::waitpid(pid_, &status_, options) == pid_) reaped_ = true;
  return reaped_;
}

std::optional<std::string> PipedAgentLink::failure() {
  if (!reap(WNOHANG)) return std::nullopt;
  if (WIFSIGNALED(status_)) {
    return style_.what + " on " + host_ + " was killed by signal " + std::to_string(WTERMSIG(status_));
  }
  if (WEXITSTATUS(status_) != 0) {
    return style_.what + " on " + host_ + " exited with code " + std::to_string(WEXITSTATUS(status_)) +
           style_.exit_hint;
  }
  return std::nullopt;
}

void PipedAgentLink::finish(std::chrono::milliseconds timeout) {
  close_write();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!reap(WNOHANG)) {
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid_, style_.stop_signal);
      if (!reap(0)) return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

}  // namespace trainrun::cli
