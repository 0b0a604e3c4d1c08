#include "cli/report/stack_capture.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>

#include "cli/process/child_process.h"
#include "cli/process/process_tree.h"
#include "cli/plan/program_path.h"

namespace trainrun::cli::report {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kParallel = 16;  // eu-stack processes at a time

// One eu-stack run on one process.
struct Run {
  std::size_t target = 0;  // index into the targets
  pid_t subject = -1;      // the process it reads
  pid_t pid = -1;          // eu-stack itself
  int out = -1, err = -1;
  std::string out_text, err_text;
  int status = 0;
};

std::string command_name(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

void start(Run& run, const std::string& program) {
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return;
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(out[0]), ::close(out[1]);
    return;
  }
  const std::string pid_text = std::to_string(run.subject);
  run.pid = ::fork();
  if (run.pid == 0) {
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    close_inherited_descriptors();
    ::execl(program.c_str(), program.c_str(), "-m", "-p", pid_text.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  run.out = out[0];
  run.err = err[0];
  if (run.pid < 0) ::close(run.out), ::close(run.err), run.out = run.err = -1;
}

bool drain(int& fd, std::string& into) {
  char buffer[65536];
  const ssize_t n = ::read(fd, buffer, sizeof buffer);
  if (n > 0) {
    into.append(buffer, static_cast<std::size_t>(n));
    return true;
  }
  if (n < 0 && errno == EINTR) return true;
  ::close(fd);
  fd = -1;
  return false;
}

// Runs every eu-stack (kParallel at a time) until done or `deadline`.
void run_all(std::vector<Run>& runs, const std::string& program, Clock::time_point deadline) {
  std::size_t next = 0;
  while (true) {
    std::vector<pollfd> fds;
    std::vector<std::pair<Run*, int*>> owners;
    std::size_t active = 0;
    for (Run& r : runs) active += (r.out >= 0 || r.err >= 0);
    while (active < kParallel && next < runs.size()) start(runs[next++], program), ++active;
    for (Run& r : runs) {
      for (int* fd : {&r.out, &r.err}) {
        if (*fd >= 0) fds.push_back({*fd, POLLIN, 0}), owners.emplace_back(&r, fd);
      }
    }
    if (fds.empty() && next >= runs.size()) break;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) break;
    ::poll(fds.data(), fds.size(), static_cast<int>(left));
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      auto [run, fd] = owners[i];
      drain(*fd, fd == &run->out ? run->out_text : run->err_text);
    }
  }
  for (Run& r : runs) {
    if (r.pid <= 0) continue;
    if (r.out >= 0 || r.err >= 0) ::kill(r.pid, SIGKILL), r.err_text += "eu-stack took too long\n";
    for (int* fd : {&r.out, &r.err}) {
      if (*fd >= 0) ::close(*fd), *fd = -1;
    }
    ::waitpid(r.pid, &r.status, 0);
  }
}

// "PID 42 - process" becomes "PID 42 - process NAME" (grouping shows the name).
std::string named(const Run& run, const std::string& name) {
  std::string text = run.out_text;
  const std::size_t end = text.find('\n');
  if (text.rfind("PID ", 0) == 0 && end != std::string::npos && !name.empty()) text.insert(end, " " + name);
  return text;
}

}  // namespace

std::string capture_failure_note(const std::string& eu_stack_stderr, int exit_code) {
  if (eu_stack_stderr.find("Operation not permitted") != std::string::npos) {
    return "ptrace was refused (Operation not permitted): run trainrun as the ranks' user with "
           "kernel.yama.ptrace_scope=0, or as root / with CAP_SYS_PTRACE";
  }
  if (eu_stack_stderr.find("No such process") != std::string::npos) return "it exited before its stack was taken";
  if (exit_code == 127) return "eu-stack could not be executed";
  std::string line = eu_stack_stderr.substr(0, eu_stack_stderr.find('\n'));
  return line.empty() ? "eu-stack failed with exit code " + std::to_string(exit_code) : line;
}

CaptureResult capture_stacks(const std::vector<CaptureTarget>& targets, std::chrono::milliseconds limit,
                             const std::string& eu_stack) {
  CaptureResult result;
  const ProgramLookup found = eu_stack.empty() ? find_program("eu-stack", std::getenv("PATH"))
                                               : ProgramLookup{eu_stack, "", 0};
  if (!found.path) {
    result.host_note = "eu-stack is not installed on this host (Debian/Ubuntu: apt-get install elfutils)";
    return result;
  }
  std::vector<Run> runs;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    if (targets[i].pid <= 0) continue;
    runs.push_back(Run{i, targets[i].pid});
    for (pid_t child : descendants_of(targets[i].pid)) runs.push_back(Run{i, child});
  }
  std::vector<std::string> names;
  for (const Run& r : runs) names.push_back(command_name(r.subject));
  run_all(runs, *found.path, Clock::now() + limit);
  result.ranks.resize(targets.size());
  for (std::size_t i = 0; i < targets.size(); ++i) {
    result.ranks[i].rank = targets[i].rank;
    if (targets[i].pid <= 0) result.ranks[i] = {targets[i].rank, "it had exited before the request", true};
  }
  for (std::size_t k = 0; k < runs.size(); ++k) {
    CapturedStack& into = result.ranks[runs[k].target];
    if (into.note) continue;
    const int code = WIFEXITED(runs[k].status) ? WEXITSTATUS(runs[k].status) : 128;
    const bool first = k == 0 || runs[k - 1].target != runs[k].target;
    if (runs[k].out_text.find("TID ") != std::string::npos) {
      into.text += named(runs[k], names[k]);
    } else if (first) {  // the rank itself has no stack: say why
      into = {into.rank, capture_failure_note(runs[k].err_text, code), true};
    }
  }
  return result;
}

}  // namespace trainrun::cli::report
