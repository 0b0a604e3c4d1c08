#include "cli/mpirun/mpirun_launcher.h"

#include <signal.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <thread>

#include "cli/process/subprocess.h"
#include "cli/plan/job_plan.h"
#include "cli/job/job_state.h"
#include "cli/plan/local_host.h"
#include "cli/mode/planned_job.h"
#include "cli/mpirun/mpirun_command.h"
#include "cli/mpirun/mpirun_output.h"
#include "cli/output/job_output.h"
#include "cli/output/output_router.h"
#include "cli/job/report_recorder.h"
#include "cli/plan/shell_words.h"
#include "cli/plan/program_path.h"
#include "contract/environment.h"
#include "os/unique_fd.h"
#include "trainrun/error.h"

namespace trainrun::cli {
namespace {

using Clock = std::chrono::steady_clock;

// The job-level settings this trainrun hands to every rank: --backend, and
// those of contract::kJobEnv the user exported (remote ranks see only -x).
MpirunJob describe_job(const Options& options, const JobPlan& plan, const std::string& mpirun) {
  MpirunJob job;
  job.mpirun = mpirun;
  job.np = static_cast<int>(plan.ranks.size());
  // Without -H/--hostfile every rank runs here (mpirun_command says localhost).
  if (!options.hosts.empty() || !options.hostfile.empty()) job.hosts = plan.hosts;
  job.job_env = plan.forwarded;  // -x NAME and NAME=VALUE, with the value trainrun sees
  job.local_cpus = static_cast<int>(std::thread::hardware_concurrency());
  if (!options.backend.empty()) job.job_env.emplace_back(contract::kEnvBackend, options.backend);
  for (const char* name : contract::kJobEnv) {
    if (std::getenv(name)) job.forward_env.emplace_back(name);
  }
  // mpirun tags every piece of output so that trainrun's OutputRouter can
  // give it to its rank (cli/mpirun/mpirun_output.h); the router tags lines,
  // stamps them, filters ranks and writes the files as trainrun's options say.
  job.tag_output = true;
  job.timestamp_output = false;
  job.bind_to = options.bind_to;
  job.map_by = options.mpirun_map_by;  // mpirun places and binds as its own --map-by says
  job.report_bindings = options.report_bindings;
  job.mca = options.mca;
  job.mpi_args = options.mpi_args;
  if (!options.wdir.empty()) job.wdir = job_directory(options);
  job.as_root = ::geteuid() == 0;
  job.command = options.command;
  return job;
}

// mpirun's stdout and stderr, read into trainrun's OutputRouter.
class MpirunPipes {
 public:
  MpirunPipes(OutputRouter& router, UniqueFd out, UniqueFd err) : router_(router), parser_(router) {
    fds_[0] = std::move(out);
    fds_[1] = std::move(err);
  }
  // Reads what mpirun wrote and writes what the console takes, waiting up to `wait`.
  void pump(std::chrono::milliseconds wait) {
    pollfd pfd[4];
    int n = 0;
    for (int i = 0; i < 2; ++i) {
      if (fds_[i] && !router_.backlogged()) pfd[n++] = {fds_[i].get(), POLLIN, 0};
    }
    for (int stream : {1, 2}) {
      if (router_.wants_write(stream)) pfd[n++] = {router_.fd(stream), POLLOUT, 0};
    }
    ::poll(pfd, static_cast<nfds_t>(n), static_cast<int>(wait.count()));
    for (int i = 0; i < 2; ++i) read_from(i);
    router_.flush_stale(Clock::now());
    for (int stream : {1, 2}) router_.write_some(stream);
  }
  // After mpirun ended: the rest of its output (bounded: a rank it left
  // behind may hold the pipes), then everything to the console.
  void finish() {
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    while ((fds_[0] || fds_[1]) && Clock::now() < deadline) pump(std::chrono::milliseconds(50));
    parser_.finish(Clock::now());
    router_.finish();
    router_.drain(std::chrono::seconds(5));
  }
  void note(const std::string& line) {
    router_.note(line);
    for (int stream : {1, 2}) router_.write_some(stream);
  }

 private:
  void read_from(int i) {
    if (!fds_[i]) return;
    char buffer[65536];
    const ssize_t n = ::read(fds_[i].get(), buffer, sizeof buffer);
    if (n > 0) {
      parser_.feed(i + 1, std::string_view(buffer, static_cast<std::size_t>(n)), Clock::now());
    } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
      fds_[i].reset();
    }
  }

  OutputRouter& router_;
  MpirunOutput parser_;
  UniqueFd fds_[2];  // mpirun's stdout and stderr, non-blocking: read what is there
};

// Waits for mpirun; the first INT/TERM/HUP sends it SIGTERM (it stops the
// ranks), SIGKILL follows after the grace period or a second SIGINT.
// `report` learns how it ended, with the line trainrun printed.
int supervise(pid_t mpirun, const sigset_t& handled, double grace_s, ReportRecorder& report, MpirunPipes& pipes) {
  std::optional<int> stop_signal;
  Clock::time_point kill_at = Clock::time_point::max();  // none yet
  int status = 0;
  while (true) {
    pipes.pump(std::chrono::milliseconds(100));
    timespec no_wait{0, 0};
    const int sig = ::sigtimedwait(&handled, nullptr, &no_wait);
    if (::waitpid(mpirun, &status, WNOHANG) == mpirun) break;  // every wake-up: SIGCHLDs merge
    if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
      if (stop_signal && sig == SIGINT) {
        ::kill(mpirun, SIGKILL);  // second Ctrl-C: no more grace
      } else if (!stop_signal) {
        stop_signal = sig;
        const std::string line = "trainrun: received " + signal_name(sig) + ", stopping the job";
        pipes.note(line);
        report.failed("signal", line);
        ::kill(mpirun, SIGTERM);
        kill_at = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(grace_s));
      }
    } else if (sig == SIGUSR1 || sig == SIGUSR2) {
      ::kill(mpirun, sig);  // mpirun forwards these to every rank
    }
    if (Clock::now() >= kill_at) {
      ::kill(mpirun, SIGKILL);
      kill_at = Clock::time_point::max();
    }
  }
  pipes.finish();
  if (stop_signal) return 128 + *stop_signal;
  const int code = shell_status(status);
  std::string line;
  if (WIFSIGNALED(status)) {
    line = "trainrun: job failed: mpirun was killed by " + signal_name(WTERMSIG(status));
  } else if (code != 0) {
    line = "trainrun: job failed: mpirun exited with code " + std::to_string(code) + " (see its report above)" +
           rank_code_note(code);
  }
  if (!line.empty()) {
    pipes.note(line);
    report.failed("rank_failed", line);
  }
  return code;
}

// Runs mpirun with its stdout and stderr on pipes to trainrun's output path.
int start_and_supervise(const Options& options, const JobPlan& plan, const std::string& mpirun,
                        const std::vector<std::string>& argv, const std::vector<std::string>& env,
                        const sigset_t& handled, const sigset_t& original, ReportRecorder& report) {
  const OutputRouter::Options output_options = job_output_options(options, plan);
  std::optional<OutputRouter> router;
  try {
    router.emplace(output_options);
  } catch (const Error& e) {
    std::cerr << "trainrun: error: " << e.what() << "\n";
    return 1;
  }
  SpawnRequest request;
  request.program = mpirun;
  request.argv = argv;
  request.env = env;
  request.out = request.err = ChildStream::pipe();
  request.mask = original;
  request.die_with_parent = true;
  // mpirun stays in trainrun's process group (no new session): it forwards
  // the terminal's stdin to rank 0, which a background group could not read.
  Subprocess started = spawn(request);
  if (!started.started()) {
    std::cerr << "trainrun: error: cannot start mpirun: " << std::strerror(started.error) << "\n";
    return 1;
  }
  if (!set_nonblocking(started.out.get()) || !set_nonblocking(started.err.get())) {
    std::cerr << "trainrun: error: cannot read mpirun's output: fcntl: " << std::strerror(errno) << "\n";
    ::kill(started.pid, SIGKILL);
    ::waitpid(started.pid, nullptr, 0);
    return 1;
  }
  MpirunPipes pipes(*router, std::move(started.out), std::move(started.err));
  const int code = supervise(started.pid, handled, options.grace_s, report, pipes);
  report.lost_output(router->write_failures());
  return code;
}

}  // namespace

int run_mpirun(const Options& options, ReportRecorder& report) {
  report.set_launcher("mpirun");
  if (options.backend == "tcp") {
    std::cerr << "trainrun: error: --backend tcp needs trainrun's rendezvous, which ranks started by "
                 "mpirun do not have; use --backend mpi (the default under mpirun)\n";
    return 2;
  }
  const ProgramLookup mpirun = find_program("mpirun", std::getenv("PATH"));
  if (!mpirun.path) {
    std::cerr << "trainrun: error: --launcher mpirun: mpirun not found in PATH; install Open MPI "
                 "(Debian/Ubuntu: apt-get install openmpi-bin)\n";
    return 127;
  }
  const PlanResult planned = make_plan(options, this_host_name(), &std::getenv, read_text_file);
  if (!planned.plan) {
    std::cerr << "trainrun: error: " << planned.error << "\n";
    return kExitUsage;
  }
  report.planned(*planned.plan, {});
  report.ranks_unobserved(
      "mpirun started the ranks: their pids, times, exit statuses, backends and the "
      "stragglers table are not known to trainrun");
  std::vector<std::string> names;
  for (const HostSlots& host : planned.plan->hosts) names.push_back(host.host);
  const std::vector<bool> local = are_local_hosts(names);
  const bool all_local = std::find(local.begin(), local.end(), false) == local.end();
  // Every rank runs here: a missing program is one clear error up front
  // (on other hosts mpirun says so itself).
  const ProgramLookup program = find_job_program(options);
  if (all_local && !program.path) {
    std::cerr << "trainrun: error: " << program.error << "\n";
    return program.exit_code;
  }
  std::vector<std::string> argv;
  try {
    argv = mpirun_command(describe_job(options, *planned.plan, *mpirun.path));
  } catch (const Error& e) {
    std::cerr << "trainrun: error: " << e.what() << "\n";
    return 2;
  }
  if (options.dry_run) {
    std::cout << display_join(argv) << "\n";
    return 0;
  }
  if (options.display_map) std::cerr << rank_map(planned.plan->ranks, planned.plan->hosts.size());
  if (options.verbose) std::cerr << "trainrun: running " << display_join(argv) << "\n";

  sigset_t handled, original;
  sigemptyset(&handled);
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2}) sigaddset(&handled, sig);
  if (::sigprocmask(SIG_BLOCK, &handled, &original) != 0) {
    std::cerr << "trainrun: error: cannot block the job's signals: " << std::strerror(errno) << "\n";
    return 1;
  }
  const int code =
      start_and_supervise(options, *planned.plan, *mpirun.path, argv, current_environment(), handled, original, report);
  ::sigprocmask(SIG_SETMASK, &original, nullptr);
  return code;
}

}  // namespace trainrun::cli
