// Runs a real program for a test and collects what a user would see: exit
// status, stdout, stderr, time. A Child can also be left running to be
// signalled. Linux only; one thread per Child.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace trainrun::test {

struct ProcessResult {
  int exit_code = -1;      // shell-style: code, or 128 + signal
  int signal = 0;          // when killed by a signal
  bool timed_out = false;  // killed by the runner after the timeout
  std::string out;
  std::string err;
  double seconds = 0;
  long peak_rss_kib = -1;  // the process's VmHWM, when tracked
};

struct ProcessOptions {
  std::vector<std::string> env;  // NAME=VALUE added to (or replacing in) the runner's environment
  std::string input;             // written to stdin, then closed
  std::chrono::milliseconds timeout{120'000};
  bool new_process_group = true;  // so that a test can signal the whole group
  // A slow console: read at most read_chunk bytes, then pause.
  std::size_t read_chunk = 65536;
  std::chrono::microseconds read_pause{0};
  bool track_rss = false;  // sample the process's peak RSS while it runs
  std::string cwd;         // the child's working directory (empty: the runner's)
};

class Child {
 public:
  Child(const std::vector<std::string>& argv, const ProcessOptions& options);
  ~Child();  // kills and reaps if still running
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  void signal(int sig) const;        // the process only
  void signal_group(int sig) const;  // its whole process group
  // Reads output until the process exits (or the timeout kills it).
  ProcessResult wait();
  // Reads output until `text` shows up on stdout or stderr; false on timeout.
  bool wait_for_output(const std::string& text, std::chrono::milliseconds timeout);

 private:
  void pump(int timeout_ms);

  pid_t pid_ = -1;
  int out_fd_ = -1, err_fd_ = -1;
  ProcessOptions options_;
  std::chrono::steady_clock::time_point start_;
  ProcessResult result_;
  bool reaped_ = false;
};

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options = {});

// Pids of live (not zombie) processes whose environment holds `entry`
// ("NAME=value"), e.g. a job's TRAINRUN_JOB_ID or a tag a test set.
std::vector<pid_t> processes_with_env(const std::string& entry);
// A fresh "TRAINRUN_TEST_TAG=..." for one test's job: ranks inherit it, so
// processes_with_env(tag) finds whatever the job left behind.
std::string unique_tag();

// A process's peak resident set (VmHWM) in KiB, or -1 if it is gone.
long peak_rss_kib(pid_t pid);
// A kB field of /proc/PID/status ("VmRSS", "VmHWM"), or -1.
long proc_status_kib(pid_t pid, const std::string& field);
// How many entries /proc/PID/SUB holds (threads for "task", descriptors
// for "fd"); -1 if it cannot be read.
int proc_entries(pid_t pid, const std::string& sub);

// A path to a built program, from an environment variable meson sets.
std::string program_path(const char* variable);

// The whole content of a file, bytes as they are; empty if it cannot be read.
std::string read_file(const std::string& path);

}  // namespace trainrun::test
