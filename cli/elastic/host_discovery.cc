#include "cli/elastic/host_discovery.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "cli/plan/host_list.h"
#include "cli/job/job_state.h"
#include "cli/plan/printable.h"
#include "cli/process/process_tree.h"
#include "cli/process/subprocess.h"
#include "os/unique_fd.h"

namespace trainrun::cli::elastic {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// After the script exits, how long its output is still read: a background
// process it left holding the pipes must not stretch the run to the timeout.
constexpr milliseconds kExitGrace{100};
// How often exit is checked where the kernel has no pidfd_open (before 5.3).
constexpr milliseconds kExitCheck{20};
constexpr const char* kOrigin = "stdout";  // how parse errors name the output

enum class End { Exited, TimedOut, Stopped };

// One of the script's output pipes, read up to `cap` bytes.
struct Capture {
  UniqueFd fd;
  std::size_t cap = 0;
  std::string text;
};

// Reads what is there; past the cap it reads and drops, so the script never
// blocks on a full pipe. Closes the pipe at EOF.
void drain(Capture& c) {
  char buffer[16384];
  const ssize_t n = ::read(c.fd.get(), buffer, sizeof buffer);
  if (n > 0) {
    c.text.append(buffer, std::min(static_cast<std::size_t>(n), c.cap - std::min(c.cap, c.text.size())));
  } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
    c.fd.reset();
  }
}

// Exited, but not reaped yet (WNOWAIT): its pid, and so its process group's
// id, cannot be reused while we still mean to signal the group.
bool has_exited(pid_t pid) {
  siginfo_t info{};
  return ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid;
}

UniqueFd open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  return UniqueFd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
#else
  return UniqueFd();
#endif
}

int millis_until(Clock::time_point when) {
  const auto left = std::chrono::duration_cast<milliseconds>(when - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left + 1, 0, 1 << 30));
}

// Reads the script's output until it exits (and its pipes close, or the
// grace ends), `deadline` passes or `stop_fd` becomes readable.
End wait_for_script(pid_t pid, Capture& out, Capture& err, Clock::time_point deadline, int stop_fd) {
  const UniqueFd pidfd = open_pidfd(pid);  // readable at exit: no polling for it
  std::optional<Clock::time_point> exited_at;
  End end;
  while (true) {
    if (!exited_at && has_exited(pid)) exited_at = Clock::now();
    if (exited_at && ((!out.fd && !err.fd) || Clock::now() >= *exited_at + kExitGrace)) {
      end = End::Exited;
      break;
    }
    if (!exited_at && Clock::now() >= deadline) {
      end = End::TimedOut;
      break;
    }
    int wait_ms = millis_until(exited_at ? *exited_at + kExitGrace : deadline);
    if (!exited_at && !pidfd) wait_ms = std::min(wait_ms, static_cast<int>(kExitCheck.count()));
    pollfd fds[4] = {{out.fd.get(), POLLIN, 0},
                     {err.fd.get(), POLLIN, 0},
                     {stop_fd, POLLIN, 0},
                     {exited_at ? -1 : pidfd.get(), POLLIN, 0}};  // poll skips negative descriptors
    if (::poll(fds, 4, wait_ms) < 0 && errno != EINTR) wait_ms = 0;
    if (fds[2].revents) {
      end = End::Stopped;
      break;
    }
    if (fds[0].revents) drain(out);
    if (fds[1].revents) drain(err);
  }
  return end;
}

// Ends the script and whatever it started: its descendants first (one that
// left the session with setsid is found through /proc while the script
// still holds it as its child), then its whole process group.
void kill_script(pid_t pid) {
  signal_descendants(pid, SIGKILL);
  ::killpg(pid, SIGKILL);
}

std::string first_line(const std::string& text) {
  const std::size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string::npos) return "";
  const std::size_t end = text.find_first_of("\r\n", start);
  return printable(text.substr(start, end == std::string::npos ? std::string::npos : end - start), 200);
}

std::string seconds_text(milliseconds ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", static_cast<double>(ms.count()) / 1000.0);
  return text;
}

// The verdict on a finished run: its exit status, then its output.
std::string judge(DiscoveryRun& run, int status, const Capture& out, const std::string& err_text, int default_slots) {
  if (WIFSIGNALED(status)) return "was killed by " + signal_name(WTERMSIG(status));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    const std::string line = first_line(err_text);
    return "exited with code " + std::to_string(shell_status(status)) + (line.empty() ? "" : ": " + line);
  }
  if (out.text.size() >= out.cap) return "printed more than " + std::to_string(out.cap >> 20) + " MiB";
  HostListResult parsed = parse_hostfile(out.text, kOrigin, default_slots);
  if (parsed.ok()) {
    run.hosts = std::move(parsed.hosts);
    return "";
  }
  if (parsed.hosts.empty() && parsed.error == std::string(kOrigin) + ": no hosts") return "listed no hosts";
  return "printed a bad line: " + parsed.error;
}

}  // namespace

DiscoveryRun run_discovery_script(const std::string& path, milliseconds timeout) {
  return run_discovery_script(path, timeout, -1);
}

DiscoveryRun run_discovery_script(const std::string& path, milliseconds timeout, int stop_fd, int default_slots) {
  DiscoveryRun run;
  const std::string name = "--host-discovery-script " + printable(path, 1024) + " ";
  SpawnRequest request;
  request.program = path;
  request.argv = {path};
  request.env = current_environment();
  request.in = ChildStream::null();
  request.out = request.err = ChildStream::pipe();
  request.group = ChildGroup::NewSession;
  request.default_sigpipe = true;
  request.die_with_parent = true;
  // (no mask: the script's signals are its own, not the launcher's blocked set)
  Subprocess child = spawn(request);
  if (!child.started() && std::strcmp(child.step, "exec") != 0) {
    run.error = name + "cannot be started: " + std::strerror(child.error);
    return run;
  }
  Capture out_capture{std::move(child.out), kMaxDiscoveryStdout, ""};
  Capture err_capture{std::move(child.err), kMaxDiscoveryStderr, ""};
  End end = End::Exited;
  int status = 0;
  if (child.started()) {
    end = wait_for_script(child.pid, out_capture, err_capture, Clock::now() + timeout, stop_fd);
    kill_script(child.pid);  // also what an exited script left running in its group
    while (::waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  out_capture.fd.reset();
  err_capture.fd.reset();
  run.stderr_text = std::move(err_capture.text);
  if (!child.started()) {
    run.error = name + "cannot be executed: " + std::strerror(child.error);
  } else if (end == End::TimedOut) {
    run.error = name + "did not finish within " + seconds_text(timeout);
  } else if (end == End::Stopped) {
    run.error = name + "was stopped";
  } else if (std::string why = judge(run, status, out_capture, run.stderr_text, default_slots); !why.empty()) {
    run.error = name + why;
  }
  run.ok = run.error.empty();
  return run;
}

namespace {

bool same_hosts(const std::vector<HostSlots>& a, const std::vector<HostSlots>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const HostSlots& x, const HostSlots& y) {
    return x.host == y.host && x.slots == y.slots && x.user == y.user;
  });
}

}  // namespace

HostDiscovery::HostDiscovery(std::string path, milliseconds interval, milliseconds timeout, int default_slots)
    : path_(std::move(path)), interval_(interval), timeout_(timeout), default_slots_(default_slots) {
  // One eventfd both wakes the thread from its interval sleep and cuts a
  // running script short (run_discovery_script polls it too).
  stop_fd_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
}

HostDiscovery::~HostDiscovery() {
  if (stop_fd_) {
    const std::uint64_t one = 1;
    (void)!::write(stop_fd_.get(), &one, sizeof one);
  }
  if (thread_.joinable()) thread_.join();
}

DiscoveryRun HostDiscovery::first() {
  DiscoveryRun run = run_discovery_script(path_, timeout_, stop_fd_.get(), default_slots_);
  if (run.ok) record(run);
  return run;
}

void HostDiscovery::start() {
  if (!thread_.joinable()) thread_ = std::thread([this] { poll_loop(); });
}

void HostDiscovery::poll_loop() {
  // Without the eventfd (out of descriptors) the destructor could not stop
  // a poll, so there is none: the answer stays first()'s.
  while (true) {
    pollfd stop = {stop_fd_.get(), POLLIN, 0};
    if (!stop_fd_ || ::poll(&stop, 1, static_cast<int>(interval_.count())) > 0) return;
    const DiscoveryRun run = run_discovery_script(path_, timeout_, stop_fd_.get(), default_slots_);
    if (::poll(&stop, 1, 0) > 0) return;  // stopped mid-run: that run's failure is no news
    record(run);
  }
}

void HostDiscovery::record(const DiscoveryRun& run) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!run.ok) {
    if (!failing_) failure_taken_ = false;
    failing_ = true;
    failure_ = run.error;
    return;
  }
  failing_ = false;
  if (!same_hosts(hosts_, run.hosts)) {
    hosts_ = run.hosts;
    ++version_;
  }
}

std::vector<HostSlots> HostDiscovery::hosts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return hosts_;
}

std::uint64_t HostDiscovery::version() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return version_;
}

std::optional<std::string> HostDiscovery::take_failure() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!failing_ || failure_taken_) return std::nullopt;
  failure_taken_ = true;
  return failure_;
}

}  // namespace trainrun::cli::elastic
