// Supervisor: the launcher's event loop from the moment agents are started
// until the last rank has exited and every agent is gone. It sends each
// agent its job, routes rank output to the console and files, forwards
// stdin to one rank and signals to all, watches --timeout and
// --start-timeout, and turns what happens into JobState decisions
// (teardown: Terminate frames, then Kill). Single-threaded; signals arrive
// through a signalfd, so they must be blocked before any thread or agent
// starts (see block_job_signals).
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "cli/agent_link.h"
#include "cli/agent_protocol.h"
#include "cli/job_state.h"
#include "cli/output_router.h"
#include "cli/report/rank_events.h"

namespace trainrun::rendezvous {
class KvTable;
}

namespace trainrun::cli {
namespace report {
class StackDumps;
}

struct SupervisorOptions {
  double grace_s = 5;
  double timeout_s = 0;        // 0: none
  int start_timeout_s = 30;
  int stdin_rank = 0;          // -1: nobody reads trainrun's stdin
  bool verbose = false;
  RankEvents* events = nullptr;  // the JSON report's ranks (cli/report), or none
};

// Blocks the signals the supervisor takes synchronously (call first, before
// threads or children exist); returns the previous mask.
sigset_t block_job_signals();

class Supervisor {
 public:
  Supervisor(SupervisorOptions options, JobState& state, OutputRouter& output,
             const rendezvous::KvTable* rendezvous);
  ~Supervisor();

  // Stack dumps of every rank (SIGQUIT, --timeout, stalls); none without.
  void attach_stacks(report::StackDumps& stacks) { stacks_ = &stacks; }

  // agents[i] runs jobs[i]. Returns when the job is over.
  void run(std::vector<std::unique_ptr<AgentLink>>& agents, const std::vector<JobSpec>& jobs);

 private:
  struct Peer;
  using Clock = std::chrono::steady_clock;

  void send_all(FrameType type, const std::string& payload);
  void apply(JobState::Action action);
  void on_frame(Peer& peer, const Frame& frame);
  void on_readable(Peer& peer);
  void on_signal();
  void forward_stdin();
  void check_start_timeout();
  std::vector<int> unregistered_ranks() const;
  void request_stacks(const std::string& reason);
  void stacks_frame(Peer& peer, const Frame& frame);
  void print_stacks_when_due(bool now);

  SupervisorOptions options_;
  JobState& state_;
  OutputRouter& output_;
  const rendezvous::KvTable* rendezvous_;
  report::StackDumps* stacks_ = nullptr;
  std::vector<Peer> peers_;
  int signal_fd_ = -1;
  bool stdin_open_ = false;
  std::size_t stdin_peer_ = 0;  // the agent of options_.stdin_rank
  Clock::time_point started_;
  std::optional<Clock::time_point> kill_at_;
  bool start_checked_ = false;
  bool idle_ = true;  // the last poll round read no agent output
  // Time spent not reading agents because the console was back-pressured:
  // it does not count towards holding an unfinished line, whose rest may be
  // waiting unread in the pipe.
  Clock::duration held_back_{};
  Clock::time_point output_clock() const { return Clock::now() - held_back_; }
};

}  // namespace trainrun::cli
