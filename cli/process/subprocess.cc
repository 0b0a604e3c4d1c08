#include "cli/process/subprocess.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace trainrun::cli {
namespace {

// What the child reports on the status pipe (ExecFailure::Report): the step
// that failed and its errno. A successful exec closes the pipe (CLOEXEC)
// unwritten.
struct ChildFailure {
  int step = 0;  // kStepDup2 or kStepExec
  int error = 0;
};
constexpr int kStepDup2 = 1, kStepExec = 2;

// Everything the child needs, built before fork: the child may not allocate.
struct ChildPlan {
  const SpawnRequest& request;
  std::vector<char*> argv, envp;
  int stdio[3] = {-1, -1, -1};  // become the child's 0, 1, 2; -1: inherited
  int status_fd = -1;           // ExecFailure::Report: the status pipe's write end
  pid_t parent = ::getpid();
  sigset_t mask{};

  explicit ChildPlan(const SpawnRequest& r) : request(r) {
    for (const auto& a : r.argv) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    for (const auto& e : r.env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    if (r.mask) {
      mask = *r.mask;
    } else {
      sigemptyset(&mask);
    }
  }
};

// write(2) of each piece to the child's stderr; async-signal-safe.
void say(std::initializer_list<const char*> pieces) {
  for (const char* piece : pieces) (void)!::write(STDERR_FILENO, piece, std::strlen(piece));
}

[[noreturn]] void fail_in_child(const ChildPlan& plan, int step, int error) {
  if (plan.request.on_exec_failure == ExecFailure::Report) {
    const ChildFailure failure{step, error};
    (void)!::write(plan.status_fd, &failure, sizeof failure);
    ::_exit(127);
  }
  say({"trainrun: cannot ", step == kStepExec ? "execute " : "set up the descriptors of ", plan.request.program.c_str(),
       ": ", std::strerror(error), "\n"});
  const bool like_shell = plan.request.on_exec_failure == ExecFailure::ExitLikeShell;
  ::_exit(like_shell && error != ENOENT ? 126 : 127);
}

void enter_group_and_signals(const ChildPlan& plan) {
  const SpawnRequest& r = plan.request;
  if (r.group == ChildGroup::NewSession) {
    ::setsid();
  } else if (r.group == ChildGroup::Own) {
    ::setpgid(0, 0);
  }
  if (r.die_with_parent) ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (r.ptracer > 0) ::prctl(PR_SET_PTRACER, r.ptracer);
  if (r.die_with_parent && ::getppid() != plan.parent) ::_exit(127);  // the launcher died before prctl
  ::sigprocmask(SIG_SETMASK, &plan.mask, nullptr);
  if (r.default_sigpipe) {
    struct sigaction action {};
    action.sa_handler = SIG_DFL;
    ::sigaction(SIGPIPE, &action, nullptr);
  }
}

// The standard descriptors, then every other one closed but the status pipe.
// A source below 3 is first moved out of the way, so that setting up one
// target never overwrites the source of another.
void map_descriptors(ChildPlan& plan) {
  for (int& source : plan.stdio) {
    if (source >= 0 && source <= STDERR_FILENO && (source = ::fcntl(source, F_DUPFD_CLOEXEC, 3)) < 0) {
      fail_in_child(plan, kStepDup2, errno);
    }
  }
  for (int target = 0; target < 3; ++target) {
    if (plan.stdio[target] >= 0 && ::dup2(plan.stdio[target], target) < 0) fail_in_child(plan, kStepDup2, errno);
  }
  const int keep = plan.status_fd;
  if (keep < 0) {
    close_inherited_descriptors();
  } else {
    if (keep > STDERR_FILENO + 1) ::close_range(STDERR_FILENO + 1, static_cast<unsigned>(keep) - 1, 0);
    ::close_range(static_cast<unsigned>(keep) + 1, ~0U, 0);
  }
}

[[noreturn]] void run_child(ChildPlan& plan) {
  const SpawnRequest& r = plan.request;
  enter_group_and_signals(plan);
  map_descriptors(plan);
  if (r.cpus && ::sched_setaffinity(0, sizeof *r.cpus, &*r.cpus) != 0) {
    say({"trainrun: cannot bind this rank to cpus ", r.cpus_text.c_str(), ": ", std::strerror(errno), "\n"});
  }
  if (!r.cwd.empty() && ::chdir(r.cwd.c_str()) != 0) {
    say({"trainrun: cannot enter directory ", r.cwd.c_str(), ": ", std::strerror(errno), "\n"});
    ::_exit(126);
  }
  if (r.search_path) {
    environ = plan.envp.data();  // execvp reads PATH from the child's own environment
    ::execvp(r.program.c_str(), plan.argv.data());
  } else {
    ::execve(r.program.c_str(), plan.argv.data(), plan.envp.data());
  }
  fail_in_child(plan, kStepExec, errno);
}

Subprocess failed(const char* step, int error) {
  Subprocess result;
  result.step = step;
  result.error = error;
  return result;
}

// Waits for the status pipe: EOF with no bytes means the exec succeeded.
bool exec_failed(UniqueFd& status, ChildFailure& failure) {
  ssize_t n;
  do {
    n = ::read(status.get(), &failure, sizeof failure);
  } while (n < 0 && errno == EINTR);
  status.reset();
  return n == static_cast<ssize_t>(sizeof failure);
}

}  // namespace

std::vector<std::string> current_environment() {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  return env;
}

// The one close(2) outside UniqueFd: a forked child, which may not run
// destructors or allocate, drops what it inherited before exec.
void close_inherited_descriptors() { ::close_range(STDERR_FILENO + 1, ~0U, 0); }

Subprocess spawn(const SpawnRequest& request) {
  ChildPlan plan(request);
  UniqueFd parent_end[3], child_end[3], null_fd;
  const ChildStream* streams[3] = {&request.in, &request.out, &request.err};
  for (int i = 0; i < 3; ++i) {
    switch (streams[i]->kind) {
      case ChildStream::Kind::Inherit: break;
      case ChildStream::Kind::Fd: plan.stdio[i] = streams[i]->fd; break;
      case ChildStream::Kind::Null:
        if (!null_fd) null_fd.reset(::open("/dev/null", O_RDWR | O_CLOEXEC));
        if (!null_fd) return failed("open /dev/null", errno);
        plan.stdio[i] = null_fd.get();
        break;
      case ChildStream::Kind::Pipe: {
        PipeFds pipe = make_pipe(O_CLOEXEC);
        if (!pipe.read) return failed("pipe2", errno);
        parent_end[i] = std::move(i == 0 ? pipe.write : pipe.read);
        child_end[i] = std::move(i == 0 ? pipe.read : pipe.write);
        plan.stdio[i] = child_end[i].get();
        break;
      }
    }
  }
  PipeFds status;
  if (request.on_exec_failure == ExecFailure::Report) {
    status = make_pipe(O_CLOEXEC);
    if (!status.read) return failed("pipe2", errno);
    plan.status_fd = status.write.get();
  }
  const pid_t pid = ::fork();
  if (pid == 0) run_child(plan);
  if (pid < 0) return failed("fork", errno);
  status.write.reset();  // else the read below would never see EOF
  if (ChildFailure failure; status.read && exec_failed(status.read, failure)) {
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    return failed(failure.step == kStepExec ? "exec" : "dup2", failure.error);
  }
  Subprocess result;
  result.pid = pid;
  result.in = std::move(parent_end[0]);
  result.out = std::move(parent_end[1]);
  result.err = std::move(parent_end[2]);
  return result;
}

}  // namespace trainrun::cli
