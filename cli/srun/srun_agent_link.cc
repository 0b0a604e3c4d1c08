#include "cli/srun/srun_agent_link.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

#include "cli/child_process.h"
#include "trainrun/error.h"

namespace trainrun::cli {
namespace {

// Both ends of one pipe, closed on scope exit unless released.
struct Pipe {
  int fd[2] = {-1, -1};
  Pipe() {
    if (::pipe2(fd, O_CLOEXEC) != 0) throw Error(Error::Code::Io, std::string("cannot create a pipe for srun: ") + std::strerror(errno));
  }
  ~Pipe() {
    for (int f : fd) {
      if (f >= 0) ::close(f);
    }
  }
  int release(int end) { return std::exchange(fd[end], -1); }
};

}  // namespace

SrunAgentLink::SrunAgentLink(std::string host, const std::vector<std::string>& command) : host_(std::move(host)) {
  Pipe in, out;
  std::vector<char*> argv;
  for (const std::string& word : command) argv.push_back(const_cast<char*>(word.c_str()));
  argv.push_back(nullptr);
  srun_ = ::fork();
  if (srun_ == 0) {
    // Its own process group: a Ctrl-C at the terminal goes to trainrun alone,
    // which ends the job through the agents (srun would cancel the step).
    // No parent-death signal: when trainrun dies, srun stays to carry the
    // EOF to the agent, which then ends its ranks.
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
  if (srun_ < 0) throw Error(Error::Code::Io, "cannot start srun for " + host_ + ": " + std::strerror(errno));
  to_srun_ = in.release(1);
  from_srun_ = out.release(0);
  for (int fd : {to_srun_, from_srun_}) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

SrunAgentLink::~SrunAgentLink() {
  close_write();
  if (!reaped_ && srun_ > 0) {
    ::kill(srun_, SIGKILL);
    ::waitpid(srun_, nullptr, 0);
  }
  if (from_srun_ >= 0) ::close(from_srun_);
}

void SrunAgentLink::close_write() {
  if (to_srun_ >= 0) ::close(to_srun_);
  to_srun_ = -1;
}

bool SrunAgentLink::reap(int options) {
  if (!reaped_ && ::waitpid(srun_, &status_, options) == srun_) reaped_ = true;
  return reaped_;
}

std::optional<std::string> SrunAgentLink::failure() {
  if (!reap(WNOHANG)) return std::nullopt;
  if (WIFSIGNALED(status_)) {
    return "srun of the agent on " + host_ + " was killed by signal " + std::to_string(WTERMSIG(status_));
  }
  if (WEXITSTATUS(status_) != 0) {
    return "srun of the agent on " + host_ + " exited with code " + std::to_string(WEXITSTATUS(status_)) +
           " (see srun's message above)";
  }
  return std::nullopt;
}

void SrunAgentLink::finish(std::chrono::milliseconds timeout) {
  close_write();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!reap(WNOHANG)) {
    if (std::chrono::steady_clock::now() >= deadline) {
      // srun asks Slurm to end the step on SIGTERM; SIGKILL would leave it.
      ::kill(srun_, SIGTERM);
      if (!reap(0)) return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

}  // namespace trainrun::cli
