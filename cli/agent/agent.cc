#include "cli/agent/agent.h"

#include <fcntl.h>
#include <sched.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "cli/agent/agent_extension.h"
#include "cli/agent/agent_protocol.h"
#include "cli/agent/cpu_binding.h"
#include "cli/agent/host_probe.h"
#include "cli/process/process_tree.h"
#include "cli/report/exit_record.h"
#include "cli/plan/rank_env.h"
#include "cli/report/stack_capture.h"
#include "contract/environment.h"
#include "cli/process/subprocess.h"
#include "os/unique_fd.h"
#include "trainrun/version.h"

namespace trainrun::cli {
namespace {

using Clock = std::chrono::steady_clock;

// Above this much unsent output the agent stops reading its ranks' pipes, so
// a slow launcher (or console) slows the ranks instead of growing memory.
constexpr std::size_t kOutboundLimit = 1u << 20;

struct RankProcess {
  RankSpec spec;
  pid_t pid = -1;
  UniqueFd out_fd, err_fd, in_fd;
  bool running = false;
  std::string stdin_pending;
  bool stdin_eof = false;
};

// The rank's own use; its children's only where it waited for them.
ExitRecord exit_record(int status, const rusage& usage) {
  const auto us = [](const timeval& t) { return std::int64_t{t.tv_sec} * 1'000'000 + t.tv_usec; };
  return {status, ExitRecord::Usage{usage.ru_maxrss, us(usage.ru_utime), us(usage.ru_stime)}};
}

class Agent {
 public:
  Agent(int in_fd, int out_fd, AgentExtension* extension) : in_(in_fd), out_(out_fd), extension_(extension) {}
  int run();

 private:
  std::string setup_signals();  // "" or what failed
  void handle_frame(const Frame& frame);
  void start(JobSpec&& part, bool more);
  void spawn(RankProcess& rank);
  std::optional<CpuBinding> binding(const EnvList& env, std::string* report);
  void spawn_all(std::vector<RankSpec>& specs);
  void read_input();
  void read_output(RankProcess& rank, UniqueFd& fd, std::uint8_t stream);
  void write_stdin(RankProcess& rank);
  void handle_signal();
  void reap();
  void send_stacks(const std::vector<std::uint32_t>& skip);  // every rank's but these
  void terminate(std::chrono::milliseconds grace);
  void flush_outbound(bool block);
  void launcher_went_away();
  bool running() const;
  void queue(FrameType type, std::uint32_t rank, std::uint8_t stream, std::string_view payload) {
    if (!launcher_gone_) append_frame(outbound_, type, rank, stream, payload);
  }
  void launcher_lost() {
    launcher_gone_ = true;
    outbound_.clear();
    if (extension_) extension_->launcher_gone();
  }

  const int in_, out_;
  AgentExtension* extension_;
  AgentExtension::Send send_up_ = [this](FrameType type, std::uint32_t rank, std::string_view payload) {
    queue(type, rank, 0, payload);
  };
  UniqueFd signal_fd_;
  sigset_t original_mask_{};
  FrameReader reader_;
  std::string outbound_;
  JobSpec job_;                    // cwd, grace, stdin rank (ranks_ holds the ranks)
  std::deque<RankProcess> ranks_;  // a deque: RankProcess* stay valid as Job frames add ranks
  bool have_job_ = false;
  bool job_complete_ = false;   // the last Job frame came
  bool launcher_gone_ = false;  // stdin closed or stdout broken
  std::optional<Clock::time_point> kill_at_;
  // A remote launcher pings (Ping frames): once it has, silence on stdin
  // for ping_window_ means the connection died without an EOF (an
  // unplugged host or launcher), so the job here ends.
  std::optional<std::chrono::milliseconds> ping_window_;
  Clock::time_point ping_deadline_;
  HostProbe probe_;
  std::optional<CpuTopology> topology_;  // read at the first rank that is bound or reports
  std::vector<RankSpec> deferred_;       // added during a Terminate: started once it is over
};

std::string Agent::setup_signals() {
  // Orphans of the job (double forks, setsid escapees) become our children,
  // so the descendants of this process are the whole job on this host.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  ::signal(SIGPIPE, SIG_IGN);
  // Ctrl-C is the launcher's business: it answers with Terminate or Kill.
  ::signal(SIGINT, SIG_IGN);
  sigset_t mask;
  sigemptyset(&mask);
  for (int sig : {SIGCHLD, SIGTERM, SIGHUP}) sigaddset(&mask, sig);
  // A failure here would leave SIGCHLD and SIGTERM unread: no rank's exit
  // and no teardown would ever be seen, so it ends the agent, named.
  if (::sigprocmask(SIG_BLOCK, &mask, &original_mask_) != 0) return std::string("sigprocmask: ") + std::strerror(errno);
  signal_fd_.reset(::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!signal_fd_) return std::string("signalfd: ") + std::strerror(errno);
  for (int fd : {in_, out_}) {
    if (!set_nonblocking(fd)) return "fcntl(O_NONBLOCK): " + std::string(std::strerror(errno));
  }
  return "";
}

// `env`'s value of `name`, or "".
std::string env_value(const EnvList& env, const char* name) {
  for (const auto& [key, value] : env) {
    if (key == name) return value;
  }
  return "";
}

// The rank's CPU binding (--bind-to, by its local rank), and in `report`
// its --report-bindings line, or "" when not asked for.
std::optional<CpuBinding> Agent::binding(const EnvList& env, std::string* report) {
  namespace p = contract;
  const std::string bind_to = env_value(env, p::kEnvBindTo);
  const bool reports = env_value(env, p::kEnvReportBindings) == "1";
  if (bind_to.empty() && !reports) return std::nullopt;
  if (!topology_) topology_ = read_cpu_topology();
  const std::string local = env_value(env, p::kEnvLocalRank);
  const std::optional<CpuBinding> chosen =
      choose_binding(*topology_, bind_to, local.empty() ? 0 : std::atoi(local.c_str()));
  if (reports) *report = binding_line(env_value(env, p::kEnvRank), env_value(env, p::kEnvHostname), chosen, *topology_);
  return chosen;
}

EnvList env_overrides(const std::vector<std::string>& entries) {
  EnvList overrides;
  for (const std::string& entry : entries) {
    const std::size_t eq = entry.find('=');
    overrides.emplace_back(entry.substr(0, eq), eq == std::string::npos ? "" : entry.substr(eq + 1));
  }
  return overrides;
}

void Agent::spawn(RankProcess& rank) {
  const EnvList overrides = env_overrides(rank.spec.env);
  SpawnRequest request;
  request.program = rank.spec.argv.empty() ? std::string() : rank.spec.argv.front();
  request.argv = rank.spec.argv;
  request.env = merge_environment(current_environment(), overrides);  // the agent's, the job's entries over it
  request.search_path = true;
  const bool gets_stdin = static_cast<std::int64_t>(rank.spec.rank) == job_.stdin_rank;
  request.in = gets_stdin ? ChildStream::pipe() : ChildStream::null();
  request.out = request.err = ChildStream::pipe();
  // The rank: its own session (so teardown reaches its process group),
  // killed if the agent dies, default signal state, the job's directory;
  // Yama: the agent's eu-stack may read its stacks.
  request.group = ChildGroup::NewSession;
  request.die_with_parent = true;
  request.ptracer = ::getpid();
  request.mask = original_mask_;
  request.default_sigpipe = true;
  request.cwd = job_.cwd;
  request.on_exec_failure = ExecFailure::ExitLikeShell;
  std::string binding_report;
  if (const std::optional<CpuBinding> bound = binding(overrides, &binding_report)) {
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    for (int cpu : bound->cpus) CPU_SET(cpu, &cpus);
    request.cpus = cpus;
    request.cpus_text = format_cpu_list(bound->cpus);
  }
  Subprocess child = cli::spawn(request);
  if (!child.started()) {
    const std::string why = std::strerror(child.error);
    if (std::strcmp(child.step, "fork") != 0) {  // pipe2 or /dev/null: out of descriptors
      const std::string what = std::strcmp(child.step, "pipe2") == 0 ? "create pipes" : child.step;
      return queue(FrameType::Fatal, 0, 0, "cannot " + what + ": " + why);
    }
    // Out of processes (a large -np on one host): this rank fails, named,
    // like one that cannot be executed; the launcher ends the job.
    queue(FrameType::Output, rank.spec.rank, 2, "trainrun: cannot start this rank: fork: " + why + "\n");
    queue(FrameType::Exited, rank.spec.rank, 0, std::to_string(W_EXITCODE(126, 0)));
    return;
  }
  for (const UniqueFd* fd : {&child.out, &child.err, &child.in}) {
    if (*fd && !set_nonblocking(fd->get())) {
      queue(
          FrameType::Fatal, 0, 0,
          "cannot make the pipes of rank " + std::to_string(rank.spec.rank) + " non-blocking: " + std::strerror(errno));
    }
  }
  rank.out_fd = std::move(child.out);
  rank.err_fd = std::move(child.err);
  rank.in_fd = std::move(child.in);
  rank.pid = child.pid;
  rank.running = true;
  queue(FrameType::Started, rank.spec.rank, 0, std::to_string(child.pid));
  if (!binding_report.empty()) queue(FrameType::Output, rank.spec.rank, 2, binding_report);
}

// One Job frame: its ranks start at once, the next frame adds more.
void Agent::start(JobSpec&& part, bool more) {
  if (!have_job_) {
    job_.cwd = part.cwd;
    job_.grace_ms = part.grace_ms;
    job_.stdin_rank = part.stdin_rank;
  }
  have_job_ = true;
  job_complete_ = !more;
  spawn_all(part.ranks);
}

void Agent::spawn_all(std::vector<RankSpec>& specs) {
  for (RankSpec& spec : specs) {
    ranks_.emplace_back();
    ranks_.back().spec = std::move(spec);
    spawn(ranks_.back());
  }
}

void Agent::handle_frame(const Frame& frame) {
  auto find = [&](std::uint32_t rank) -> RankProcess* {
    for (auto& r : ranks_) {
      if (r.spec.rank == rank) return &r;
    }
    return nullptr;
  };
  switch (frame.type) {
    case FrameType::Job: {
      auto job = decode_job(frame.payload);
      if (!job || job_complete_) {
        queue(FrameType::Fatal, 0, 0, job_complete_ ? "second job description" : "malformed job description");
        return;
      }
      return start(std::move(*job), frame.stream != 0);
    }
    case FrameType::AddRanks: {
      auto more = decode_job(frame.payload);
      if (!more || !job_complete_ || launcher_gone_) {
        queue(FrameType::Fatal, 0, 0, more ? "ranks added outside a running job" : "malformed rank list");
        return;
      }
      // While a Terminate still ends the ranks before them, they wait.
      if (kill_at_) return deferred_.insert(deferred_.end(), more->ranks.begin(), more->ranks.end()), void();
      return spawn_all(more->ranks);
    }
    case FrameType::Stdin:
      if (auto* r = find(frame.rank); r && r->in_fd) r->stdin_pending += frame.payload;
      return;
    case FrameType::StdinEof:
      if (auto* r = find(frame.rank)) r->stdin_eof = true;
      return;
    case FrameType::Signal: {
      const int sig = std::atoi(frame.payload.c_str());
      for (const auto& r : ranks_) {
        if (r.running && sig > 0 && sig < NSIG) ::kill(-r.pid, sig);
      }
      return;
    }
    case FrameType::KillRank:
      if (auto* r = find(frame.rank); r && r->running) ::kill(-r->pid, SIGKILL);
      return;
    case FrameType::Terminate: return terminate(std::chrono::milliseconds(job_.grace_ms));
    case FrameType::Kill:
      signal_descendants(::getpid(), SIGKILL);
      kill_at_ = Clock::now();
      return;
    case FrameType::Ping:
      ping_window_ = std::chrono::milliseconds(std::max(1, std::atoi(frame.payload.c_str())));
      ping_deadline_ = Clock::now() + *ping_window_;
      return queue(FrameType::Pong, 0, 0, "");
    case FrameType::Probe: return queue(FrameType::ProbeResult, 0, 0, probe_.answer(frame.payload));
    case FrameType::Reach: return queue(FrameType::ReachResult, 0, 0, probe_.reach(frame.payload));
    case FrameType::Stacks: return send_stacks(decode_stack_skips(frame.payload));
    default:
      if (extension_ && extension_->handle(frame, send_up_)) return;
      queue(FrameType::Fatal, 0, 0, "unexpected frame type " + std::to_string(static_cast<int>(frame.type)));
  }
}

// SIGTERM to every rank's process group now, SIGKILL to everything the job
// started once the grace period is over.
void Agent::terminate(std::chrono::milliseconds grace) {
  if (kill_at_) return;
  for (const auto& r : ranks_) {
    if (r.running) ::kill(-r.pid, SIGTERM);
  }
  signal_descendants(::getpid(), SIGTERM);
  kill_at_ = Clock::now() + grace;
}

void Agent::read_input() {
  char buffer[65536];
  const ssize_t n = ::read(in_, buffer, sizeof buffer);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return launcher_went_away();
  if (n < 0) return;
  if (ping_window_) ping_deadline_ = Clock::now() + *ping_window_;
  reader_.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
  try {
    while (auto frame = reader_.next()) handle_frame(*frame);
  } catch (const std::exception& e) {
    queue(FrameType::Fatal, 0, 0, e.what());
    launcher_gone_ = true;
    if (extension_) extension_->launcher_gone();
    terminate(std::chrono::milliseconds(0));
  }
}

// The launcher is gone (finished, killed, the SSH channel closed or went
// silent): nothing of this job may outlive it.
void Agent::launcher_went_away() {
  launcher_gone_ = true;
  ping_window_.reset();
  if (extension_) extension_->launcher_gone();
  if (running() || !descendants_of(::getpid()).empty()) {
    terminate(std::chrono::milliseconds(have_job_ ? job_.grace_ms : 0));
  }
}

void Agent::read_output(RankProcess& rank, UniqueFd& fd, std::uint8_t stream) {
  char buffer[kOutputChunkBytes];
  while (fd) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n > 0) {
      queue(FrameType::Output, rank.spec.rank, stream, std::string_view(buffer, static_cast<std::size_t>(n)));
      if (outbound_.size() > kOutboundLimit) return;
    } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
      fd.reset();
    } else {
      return;
    }
  }
}

void Agent::write_stdin(RankProcess& rank) {
  while (!rank.stdin_pending.empty()) {
    const ssize_t n = ::write(rank.in_fd.get(), rank.stdin_pending.data(), rank.stdin_pending.size());
    if (n > 0) {
      rank.stdin_pending.erase(0, static_cast<std::size_t>(n));
    } else if (errno == EAGAIN || errno == EINTR) {
      return;
    } else {
      rank.stdin_pending.clear();  // the rank closed its stdin: drop the rest
      rank.stdin_eof = true;
    }
  }
  if (rank.stdin_eof) rank.in_fd.reset();
}

void Agent::reap() {
  int status = 0;
  pid_t pid;
  rusage usage{};
  while ((pid = ::wait4(-1, &status, WNOHANG, &usage)) > 0) {
    for (auto& r : ranks_) {
      if (r.pid != pid || !r.running) continue;
      r.running = false;
      // Output written just before exit goes out before the exit report.
      read_output(r, r.out_fd, 1);
      read_output(r, r.err_fd, 2);
      queue(FrameType::Exited, r.spec.rank, 0, encode_exit(exit_record(status, usage)));
      r.in_fd.reset();
    }
  }
}

// Synchronous: frames after the request (a Terminate on --timeout) wait
// until every rank's stack is taken, so the stacks show the hang, not the
// teardown.
void Agent::send_stacks(const std::vector<std::uint32_t>& skip) {
  std::vector<report::CaptureTarget> targets;
  for (const auto& r : ranks_) {
    if (std::find(skip.begin(), skip.end(), r.spec.rank) == skip.end()) {
      targets.push_back({r.spec.rank, r.running ? r.pid : -1});
    }
  }
  const report::CaptureResult result = report::capture_stacks(targets, std::chrono::seconds(10));
  for (const auto& stack : result.ranks) queue(FrameType::StackTrace, stack.rank, stack.note ? 1 : 0, stack.text);
  queue(FrameType::StacksDone, 0, 0, result.host_note);
  if (ping_window_) ping_deadline_ = Clock::now() + *ping_window_;  // the capture took our time, not its
}

void Agent::handle_signal() {
  signalfd_siginfo info;
  while (::read(signal_fd_.get(), &info, sizeof info) == sizeof info) {
    if (info.ssi_signo == SIGCHLD) {
      reap();
    } else {
      // SIGTERM/SIGHUP to the agent itself: end the job on this host, and
      // keep reporting to the launcher while it goes.
      terminate(std::chrono::milliseconds(have_job_ ? job_.grace_ms : 0));
    }
  }
  reap();  // coalesced SIGCHLDs
}

void Agent::flush_outbound(bool block) {
  while (!outbound_.empty()) {
    const ssize_t n = ::write(out_, outbound_.data(), outbound_.size());
    if (n > 0) {
      outbound_.erase(0, static_cast<std::size_t>(n));
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (!block) return;
      pollfd pfd{out_, POLLOUT, 0};
      if (::poll(&pfd, 1, 2000) <= 0) return launcher_lost();
    } else {
      return launcher_lost();
    }
  }
}

bool Agent::running() const {
  for (const auto& r : ranks_) {
    if (r.running) return true;
  }
  return false;
}

int Agent::run() {
  if (const std::string failed = setup_signals(); !failed.empty()) {
    queue(FrameType::Fatal, 0, 0, "cannot watch the job's signals: " + failed);
    flush_outbound(true);
    return 1;
  }
  queue(FrameType::Hello, 0, 0, kVersion);
  while (true) {
    if (launcher_gone_ && !running()) {
      // The job on this host is over: nothing it started may remain.
      if (descendants_of(::getpid()).empty() && (!extension_ || extension_->done())) break;
      if (!kill_at_) terminate(std::chrono::milliseconds(have_job_ ? job_.grace_ms : 0));
    }
    std::vector<pollfd> fds;
    std::vector<std::pair<RankProcess*, UniqueFd*>> sources;
    fds.push_back({signal_fd_.get(), POLLIN, 0});
    if (!launcher_gone_) fds.push_back({in_, POLLIN, 0});
    if (!outbound_.empty()) fds.push_back({out_, POLLOUT, 0});
    const std::size_t first_rank_fd = fds.size();
    if (outbound_.size() <= kOutboundLimit) {
      for (auto& r : ranks_) {
        for (UniqueFd* fd : {&r.out_fd, &r.err_fd}) {
          if (*fd) {
            fds.push_back({fd->get(), POLLIN, 0});
            sources.emplace_back(&r, fd);
          }
        }
      }
    }
    const std::size_t first_extension_fd = fds.size();
    if (extension_) extension_->add_fds(fds, outbound_.size() <= kOutboundLimit);
    for (auto& r : ranks_) {
      if (r.in_fd && (!r.stdin_pending.empty() || r.stdin_eof)) write_stdin(r);
    }
    int timeout = -1;
    if (kill_at_) {
      timeout = static_cast<int>(std::max<long long>(
          0, std::chrono::duration_cast<std::chrono::milliseconds>(*kill_at_ - Clock::now()).count()));
    }
    if (launcher_gone_ || ping_window_) timeout = timeout < 0 ? 100 : std::min(timeout, 100);
    ::poll(fds.data(), fds.size(), timeout);

    for (const pollfd& p : fds) {
      if (!p.revents) continue;
      if (p.fd == signal_fd_.get()) handle_signal();
      else if (p.fd == in_) read_input();
      else if (p.fd == out_) flush_outbound(false);
    }
    for (std::size_t i = 0; i < sources.size(); ++i) {
      if (fds[first_rank_fd + i].revents) {
        auto [rank, fd] = sources[i];
        read_output(*rank, *fd, fd == &rank->out_fd ? 1 : 2);
      }
    }
    for (std::size_t i = first_extension_fd; extension_ && i < fds.size(); ++i) {
      if (fds[i].revents) extension_->on_ready(fds[i], send_up_);
    }
    if (!outbound_.empty()) flush_outbound(false);
    if (ping_window_ && Clock::now() > ping_deadline_) launcher_went_away();
    if (kill_at_ && Clock::now() >= *kill_at_) {
      signal_descendants(::getpid(), SIGKILL);
      kill_at_ = Clock::now() + std::chrono::milliseconds(100);  // again, for late forks
    }
    // An elastic job goes on after one host's Terminate: once everything it
    // ended is gone, ranks may start here again.
    if (kill_at_ && !launcher_gone_ && !running() && descendants_of(::getpid()).empty()) {
      kill_at_.reset();
      spawn_all(deferred_);
      deferred_.clear();
    }
  }
  flush_outbound(true);
  return 0;
}

}  // namespace

int run_agent(int in_fd, int out_fd, AgentExtension* extension) {
  Agent agent(in_fd, out_fd, extension);
  return agent.run();
}

}  // namespace trainrun::cli
