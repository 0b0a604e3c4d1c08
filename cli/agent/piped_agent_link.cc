#include "cli/agent/piped_agent_link.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

#include "cli/process/subprocess.h"
#include "trainrun/error.h"

namespace trainrun::cli {

PipedAgentLink::PipedAgentLink(std::string host, const std::vector<std::string>& command, Style style)
    : host_(std::move(host)), style_(std::move(style)) {
  SpawnRequest request;
  request.program = command.at(0);
  request.argv = command;
  request.env = current_environment();
  request.in = request.out = ChildStream::pipe();
  // Its own process group (see the class comment); it owns its signals and
  // must not inherit our mask. No parent-death signal: when trainrun dies,
  // the EOF on the child's stdin ends the agent and its ranks.
  request.group = ChildGroup::Own;
  request.on_exec_failure = ExecFailure::Exit127;
  Subprocess child = spawn(request);
  if (!child.started()) {
    const std::string why = std::strerror(child.error);
    if (std::strcmp(child.step, "fork") == 0) {
      throw Error(Error::Code::Io, "cannot start " + style_.what + " on " + host_ + ": " + why);
    }
    throw Error(Error::Code::Io, "cannot create the pipes of the agent for " + host_ + ": " + why);
  }
  pid_ = child.pid;
  to_child_ = std::move(child.in);
  from_child_ = std::move(child.out);
  for (const UniqueFd* fd : {&to_child_, &from_child_}) {
    if (!set_nonblocking(fd->get())) {
      const std::string why = std::strerror(errno);
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      throw Error(Error::Code::Io, "cannot make the pipes of the agent for " + host_ + " non-blocking: " + why);
    }
  }
}

PipedAgentLink::~PipedAgentLink() {
  close_write();
  if (!reaped_ && pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

void PipedAgentLink::close_write() { to_child_.reset(); }

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
