#include "tests/integration/process_runner.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace trainrun::test {

Child::Child(const std::vector<std::string>& argv, const ProcessOptions& options) : options_(options) {
  int out[2], err[2], in[2];
  if (::pipe2(out, O_CLOEXEC) || ::pipe2(err, O_CLOEXEC) || ::pipe2(in, O_CLOEXEC)) {
    throw std::runtime_error("pipe failed");
  }
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  for (const auto& extra : options.env) {
    const std::string name = extra.substr(0, extra.find('=') + 1);
    bool replaced = false;
    for (auto& e : env) {
      if (e.compare(0, name.size(), name) == 0) e = extra, replaced = true;
    }
    if (!replaced) env.push_back(extra);
  }
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  start_ = std::chrono::steady_clock::now();
  pid_ = ::fork();
  if (pid_ == 0) {
    if (options.new_process_group) ::setpgid(0, 0);
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    if (!options.cwd.empty() && ::chdir(options.cwd.c_str()) != 0) {
      std::fprintf(stderr, "chdir %s: %s\n", options.cwd.c_str(), std::strerror(errno));
      ::_exit(127);
    }
    ::execve(args[0], args.data(), envp.data());
    std::fprintf(stderr, "exec %s: %s\n", args[0], std::strerror(errno));
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  ::close(in[0]);
  if (!options.input.empty()) (void)!::write(in[1], options.input.data(), options.input.size());
  ::close(in[1]);
  out_fd_ = out[0];
  err_fd_ = err[0];
}

Child::~Child() {
  if (!reaped_ && pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (out_fd_ >= 0) ::close(out_fd_);
  if (err_fd_ >= 0) ::close(err_fd_);
}

void Child::signal(int sig) const { ::kill(pid_, sig); }
void Child::signal_group(int sig) const { ::kill(-pid_, sig); }

long proc_status_kib(pid_t pid, const std::string& field) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::strtol(line.c_str() + field.size() + 1, nullptr, 10);
  }
  return -1;
}

long peak_rss_kib(pid_t pid) { return proc_status_kib(pid, "VmHWM"); }

int proc_entries(pid_t pid, const std::string& sub) {
  DIR* dir = ::opendir(("/proc/" + std::to_string(pid) + "/" + sub).c_str());
  if (!dir) return -1;
  int n = 0;
  while (dirent* entry = ::readdir(dir)) n += entry->d_name[0] != '.';
  ::closedir(dir);
  return n;
}

void Child::pump(int timeout_ms) {
  if (options_.track_rss) result_.peak_rss_kib = std::max(result_.peak_rss_kib, peak_rss_kib(pid_));
  pollfd pfds[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
  if (::poll(pfds, 2, timeout_ms) <= 0) return;
  std::vector<char> buffer(options_.read_chunk);
  if (options_.read_pause.count() > 0) ::usleep(static_cast<useconds_t>(options_.read_pause.count()));
  for (int i = 0; i < 2; ++i) {
    if (!(pfds[i].revents & (POLLIN | POLLHUP))) continue;
    const ssize_t n = ::read(pfds[i].fd, buffer.data(), buffer.size());
    if (n > 0) (i == 0 ? result_.out : result_.err).append(buffer.data(), static_cast<std::size_t>(n));
    if (n == 0) {
      ::close(pfds[i].fd);
      (i == 0 ? out_fd_ : err_fd_) = -1;
    }
  }
}

bool Child::wait_for_output(const std::string& text, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (result_.out.find(text) != std::string::npos || result_.err.find(text) != std::string::npos) return true;
    if (out_fd_ < 0 && err_fd_ < 0) return false;
    pump(50);
  }
  return false;
}

ProcessResult Child::wait() {
  const auto deadline = start_ + options_.timeout;
  int status = 0;
  while (true) {
    if (out_fd_ >= 0 || err_fd_ >= 0) pump(50);
    const pid_t done = ::waitpid(pid_, &status, WNOHANG);
    if (done == pid_) break;
    if (out_fd_ < 0 && err_fd_ < 0) ::usleep(10'000);
    if (std::chrono::steady_clock::now() > deadline && !result_.timed_out) {
      result_.timed_out = true;
      ::kill(-pid_, SIGKILL);
      ::kill(pid_, SIGKILL);
    }
  }
  reaped_ = true;
  result_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  // Output written just before exit: drain what is left (bounded, in case a
  // grandchild still holds the pipe open).
  for (int i = 0; i < 20 && (out_fd_ >= 0 || err_fd_ >= 0); ++i) pump(10);
  if (WIFEXITED(status)) result_.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) {
    result_.signal = WTERMSIG(status);
    result_.exit_code = 128 + result_.signal;
  }
  return result_;
}

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options) {
  Child child(argv, options);
  return child.wait();
}

std::vector<pid_t> processes_with_env(const std::string& wanted) {
  std::vector<pid_t> pids;
  DIR* proc = ::opendir("/proc");
  if (!proc) return pids;
  while (dirent* entry = ::readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(entry->d_name));
    if (pid <= 0 || pid == ::getpid()) continue;
    const std::string text = read_file("/proc/" + std::string(entry->d_name) + "/environ");
    std::size_t start = 0;
    while (start < text.size()) {
      std::size_t end = text.find('\0', start);
      if (end == std::string::npos) end = text.size();
      const std::string_view item(text.data() + start, end - start);
      if (item == wanted) {
        // Zombies keep their environment readable only briefly; skip them.
        std::ifstream stat("/proc/" + std::string(entry->d_name) + "/stat");
        std::string pid_text, comm, state;
        stat >> pid_text >> comm >> state;
        if (state != "Z") pids.push_back(pid);
        break;
      }
      start = end + 1;
    }
  }
  ::closedir(proc);
  return pids;
}

std::string unique_tag() {
  static int counter = 0;
  return "TRAINRUN_TEST_TAG=" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
}

std::string program_path(const char* variable) {
  const char* path = std::getenv(variable);
  if (!path) throw std::runtime_error(std::string(variable) + " is not set (run through meson test)");
  return path;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream content;
  content << in.rdbuf();
  return content.str();
}

}  // namespace trainrun::test
