#include "cli/report/stack_capture.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "cli/process/process_tree.h"
#include "cli/process/subprocess.h"
#include "cli/plan/program_path.h"
#include "os/unique_fd.h"

namespace trainrun::cli::report {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kParallel = 16;  // eu-stack processes at a time

// One eu-stack run on one process.
struct Run {
  Run(std::size_t target_index, pid_t subject_pid) : target(target_index), subject(subject_pid) {}
  std::size_t target = 0;  // index into the targets
  pid_t subject = -1;      // the process it reads
  pid_t pid = -1;          // eu-stack itself
  UniqueFd out, err;
  std::string out_text, err_text;
  int status = 0;
};

std::string command_name(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

// Its stdout and stderr on pipes, nothing of trainrun's blocked signals.
// One that cannot be executed ends with 127, as a shell would report it.
void start(Run& run, const std::string& program) {
  SpawnRequest request;
  request.program = program;
  request.argv = {program, "-m", "-p", std::to_string(run.subject)};
  request.env = current_environment();
  request.out = request.err = ChildStream::pipe();
  Subprocess child = spawn(request);
  if (!child.started()) {
    if (std::strcmp(child.step, "exec") == 0) run.status = W_EXITCODE(127, 0);
    return;
  }
  run.pid = child.pid;
  run.out = std::move(child.out);
  run.err = std::move(child.err);
}

bool drain(UniqueFd& fd, std::string& into) {
  char buffer[65536];
  const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
  if (n > 0) {
    into.append(buffer, static_cast<std::size_t>(n));
    return true;
  }
  if (n < 0 && errno == EINTR) return true;
  fd.reset();
  return false;
}

// Runs every eu-stack (kParallel at a time) until done or `deadline`.
void run_all(std::vector<Run>& runs, const std::string& program, Clock::time_point deadline) {
  std::size_t next = 0;
  while (true) {
    std::vector<pollfd> fds;
    std::vector<std::pair<Run*, UniqueFd*>> owners;
    std::size_t active = 0;
    for (Run& r : runs) active += (r.out || r.err);
    while (active < kParallel && next < runs.size()) start(runs[next++], program), ++active;
    for (Run& r : runs) {
      for (UniqueFd* fd : {&r.out, &r.err}) {
        if (*fd) fds.push_back({fd->get(), POLLIN, 0}), owners.emplace_back(&r, fd);
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
    if (r.out || r.err) ::kill(r.pid, SIGKILL), r.err_text += "eu-stack took too long\n";
    r.out.reset();
    r.err.reset();
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
  const ProgramLookup found =
      eu_stack.empty() ? find_program("eu-stack", std::getenv("PATH")) : ProgramLookup{eu_stack, "", 0};
  if (!found.path) {
    result.host_note = "eu-stack is not installed on this host (Debian/Ubuntu: apt-get install elfutils)";
    return result;
  }
  std::vector<Run> runs;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    if (targets[i].pid <= 0) continue;
    runs.emplace_back(i, targets[i].pid);
    for (pid_t child : descendants_of(targets[i].pid)) runs.emplace_back(i, child);
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
