// Supervisor: the launcher's event loop from the moment agents are started
// until the last rank has exited and every agent is gone. It sends each
// agent its job, routes rank output to the console and files, forwards
// stdin to one rank and signals to all, watches --timeout and
// --start-timeout, and turns what happens into JobState decisions
// (teardown: Terminate frames, then Kill). Single-threaded; signals arrive
// through a signalfd, so they must be blocked before any thread or agent
// starts (see BlockedJobSignals).
#pragma once

#include <poll.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <initializer_list>
#include <vector>

#include "cli/agent/agent_link.h"
#include "cli/agent/agent_protocol.h"
#include "cli/job/job_signals.h"
#include "cli/job/job_state.h"
#include "cli/output/output_router.h"
#include "cli/job/rank_events.h"
#include "os/unique_fd.h"

namespace trainrun::rendezvous {
class KvTable;
}

namespace trainrun::cli {
namespace report {
class StackDumps;
}

struct SupervisorOptions {
  double grace_s = 5;
  double timeout_s = 0;  // 0: none
  int start_timeout_s = 30;
  int stdin_rank = 0;  // -1: nobody reads trainrun's stdin
  bool verbose = false;
  RankEvents* events = nullptr;  // the JSON report's ranks (cli/report), or none
  // What the line naming the rank whose failure ends this run says next
  // ("restarting the job (restart 1 of 2)" under --max-restarts).
  std::string on_failure = "stopping the job";
};

// An elastic job's driver (cli/elastic): it decides what a rank's failure
// or a lost host means, and grows the job. Called from the supervisor's
// thread only.
class ElasticControl {
 public:
  virtual ~ElasticControl() = default;
  // True when the job goes on without this rank (it is recorded as retired).
  virtual bool absorb_exit(int rank, int raw_status) = 0;
  // True when the job goes on without the host's ranks.
  virtual bool absorb_host_lost(const std::string& host, const std::string& reason) = 0;
  // Every turn of the loop (at most ~50 ms apart).
  virtual void tick() = 0;
  // False while the job may still grow (waiting for hosts): the supervisor
  // does not end it even when every rank has exited.
  virtual bool idle() const = 0;
};

// Descriptors a launch mode watches beside the agents while the supervisor
// runs (a per-node launch: node 0's listener and the nodes' control
// connections, cli/node). Called from the supervisor's thread.
class EventSource {
 public:
  virtual ~EventSource() = default;
  // Appends what it waits for to the supervisor's poll set (and drops what it waited for too long).
  virtual void add_fds(std::vector<pollfd>& fds) = 0;
  virtual bool owns(int fd) const = 0;
  // One of its descriptors is ready; `note` prints a line of trainrun's own
  // among the ranks' output.
  virtual void on_ready(const pollfd& ready, const std::function<void(const std::string&)>& note) = 0;
};

class Supervisor {
 public:
  // Throws Error(Io) when the signalfd cannot be created.
  Supervisor(SupervisorOptions options, JobState& state, OutputRouter& output, const rendezvous::KvTable* rendezvous);
  ~Supervisor();

  // Stack dumps of every rank (SIGQUIT, --timeout, stalls); none without.
  void attach_stacks(report::StackDumps& stacks) { stacks_ = &stacks; }

  // An elastic job's driver; none: a failure ends the job.
  void attach_control(ElasticControl& control) { control_ = &control; }

  // The launch mode's own descriptors (cli/node); none without.
  void attach_events(EventSource& events) { events_ = &events; }

  // agents[i] runs jobs[i]. Returns when the job is over; agents added
  // while it ran (add_agent) are appended to `agents`.
  void run(std::vector<std::unique_ptr<AgentLink>>& agents, const std::vector<JobSpec>& jobs);

  // For the elastic driver: a new host's agent and its job (taken in at the
  // next turn of the loop); more ranks for a host's running agent; SIGTERM
  // to every rank of a host; SIGKILL to one rank; a line of trainrun's own;
  // a decision.
  void add_agent(std::unique_ptr<AgentLink> agent, const JobSpec& job);
  bool add_ranks(const std::string& host, const JobSpec& more);
  void stop_host(const std::string& host);
  void kill_rank(const std::string& host, int rank);  // SIGKILL to it alone
  void note(const std::string& line) { output_.note(line); }
  void apply(JobState::Action action);
  // Whether `line` was already printed when a host was lost, so that the
  // job's summary does not say it a second time.
  bool noted(const std::string& line) const { return line == lost_note_; }

 private:
  struct Peer;
  using Clock = std::chrono::steady_clock;

  void send_all(FrameType type, const std::string& payload);
  // To one peer, through the relays above it (a tree of agents).
  void send(Peer& peer, FrameType type, std::uint32_t rank, std::string_view payload);
  void send_frames(Peer& peer, const std::string& frames);
  void deliver(Peer& peer, std::string_view frames);
  void close_peer(Peer& peer);
  const std::string& outbound_of(const Peer& peer) const;
  Peer* find_peer(const std::string& host);
  void take_new_agents();
  void lose_host(Peer& peer, const std::string& reason);
  void on_frame(Peer& peer, const Frame& frame);
  void on_readable(Peer& peer);
  void on_bytes(Peer& peer, std::string_view bytes);
  void relayed_frame(Peer& relay, const Frame& frame);
  void on_eof(Peer& peer, const std::optional<std::string>& why);
  void on_signal();
  void forward_stdin();
  void check_start_timeout();
  // The turns of run(): set up; is it over; deadlines; what to wait on; one ready descriptor.
  void start_peers(std::vector<std::unique_ptr<AgentLink>>& agents, const std::vector<JobSpec>& jobs);
  bool all_agents_done();
  void check_deadlines(Clock::time_point now);
  std::vector<pollfd> poll_set(bool backlogged) const;
  void dispatch(const pollfd& ready);
  std::vector<int> unregistered_ranks() const;
  // Every rank's stack but `skip`'s (report::StackDumps::Request).
  void request_stacks(const std::string& reason, const std::vector<int>& skip = {});
  void stacks_frame(Peer& peer, const Frame& frame);
  void print_stacks_when_due(bool now);

  SupervisorOptions options_;
  JobState& state_;
  OutputRouter& output_;
  const rendezvous::KvTable* rendezvous_;
  report::StackDumps* stacks_ = nullptr;
  ElasticControl* control_ = nullptr;
  EventSource* events_ = nullptr;
  std::vector<Peer> peers_;
  std::vector<std::unique_ptr<AgentLink>>* agents_ = nullptr;
  std::vector<std::pair<std::unique_ptr<AgentLink>, std::string>> new_agents_;  // link, its Job frames
  UniqueFd signal_fd_;  // reads job_signals(); the constructor throws without it
  bool stdin_open_ = false;
  std::size_t stdin_peer_ = 0;  // the agent of options_.stdin_rank
  Clock::time_point started_;
  std::optional<Clock::time_point> deadline_;  // --timeout
  std::optional<Clock::time_point> kill_at_;
  bool start_checked_ = false;
  bool idle_ = true;       // the last poll round read no agent output
  std::string lost_note_;  // the last "trainrun: lost connection ..." line printed
  // Time spent not reading agents because the console was back-pressured:
  // it does not count towards holding an unfinished line, whose rest may be
  // waiting unread in the pipe.
  Clock::duration held_back_{};
  Clock::time_point output_clock() const { return Clock::now() - held_back_; }
};

}  // namespace trainrun::cli
