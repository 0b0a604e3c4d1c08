#include "cli/launch.h"

#include <signal.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/choose_launch_mode.h"
#include "cli/elastic/elastic_start.h"
#include "cli/mode/agent_mode.h"
#include "cli/mode/planned_job.h"
#include "cli/plan/host_list.h"
#include "cli/plan/job_plan.h"
#include "cli/job/job_state.h"
#include "cli/output/job_output.h"
#include "cli/output/output_router.h"
#include "cli/plan/program_path.h"
#include "cli/plan/rank_env.h"
#include "cli/ssh/remote_plan.h"
#include "cli/job/report_recorder.h"
#include "cli/report/stack_dumps.h"
#include "cli/plan/shell_words.h"
#include "cli/job/supervisor.h"
#include "rendezvous/auth.h"
#include "rendezvous/http_server.h"
#include "os/net.h"
#include "contract/environment.h"
#include "trainrun/error.h"

namespace trainrun::cli {
namespace {

JobEnv job_environment(const Options& options, const JobPlan& plan, const RemotePlan& remote) {
  JobEnv job;
  job.size = static_cast<int>(plan.ranks.size());
  job.backend = options.backend;
  job.start_timeout_s = options.start_timeout_s;
  job.max_restarts = std::max(options.reset_limit, 0);
  job.extra = plan.forwarded;
  job.extra.insert(job.extra.end(), remote.rank_env().begin(), remote.rank_env().end());
  job.rendezvous_addr = remote.bind_address();
  return job;
}

// The elastic settings every rank gets (contract/elastic_protocol.h).
void add_elastic_environment(const Options& options, JobEnv& job) {
  if (!options.elastic()) return;
  job.extra.emplace_back(contract::kEnvElastic, "1");
  // Workers wait for a new generation a little longer than the launcher
  // waits for slots, so the launcher's message names the reason.
  job.extra.emplace_back(contract::kEnvElasticTimeout,
                         std::to_string(static_cast<long long>(options.elastic_timeout_s) + 30));
}

// `slot`'s rank: argv and environment; in an elastic job, as worker `worker`.
RankSpec rank_spec(const Options& options, const RankSlot& slot, const JobEnv& job, int worker) {
  RankSpec rank;
  rank.rank = static_cast<std::uint32_t>(worker);
  rank.argv = options.command;
  for (const auto& [name, value] : rank_environment(slot, job)) rank.env.push_back(name + "=" + value);
  if (options.elastic()) rank.env.push_back(std::string(contract::kEnvWorkerId) + "=" + std::to_string(worker));
  return rank;
}

JobSpec job_template(const Options& options) {
  JobSpec spec;
  spec.cwd = job_directory(options);
  spec.grace_ms = static_cast<std::uint32_t>(options.grace_s * 1000);
  spec.stdin_rank = 0;
  return spec;
}

// One JobSpec per host: each rank's argv and environment.
std::vector<JobSpec> host_jobs(const Options& options, const JobPlan& plan, const JobEnv& job) {
  std::vector<JobSpec> jobs(plan.hosts.size(), job_template(options));
  for (const RankSlot& slot : plan.ranks) {
    jobs[static_cast<std::size_t>(slot.host_index)].ranks.push_back(rank_spec(options, slot, job, slot.rank));
  }
  return jobs;
}

// How the elastic driver starts workers and agents later in the job.
elastic::Starter elastic_starter(const Options& options, const JobEnv& job, JobAgents& agents) {
  elastic::Starter starter;
  starter.job_template = job_template(options);
  starter.rank_spec = [&options, job](const RankSlot& slot, int size, int worker) {
    JobEnv sized = job;
    sized.size = size;
    return rank_spec(options, slot, sized, worker);
  };
  starter.start_agent = [&agents](const HostSlots& host, std::string* error) { return agents.link_later(host, error); };
  return starter;
}

int dry_run(const Options& options, const PlannedJob& planned, const AgentMode& mode) {
  const JobPlan& plan = planned.plan;
  const RemotePlan& remote = planned.remote;
  JobEnv job = job_environment(options, plan, remote);
  job.master_addr = remote.is_remote(0) ? "<rank 0's host address>" : job.rendezvous_addr;
  std::cout << "trainrun: dry run: " << plan.ranks.size() << " rank(s) on " << plan.hosts.size()
            << " host(s); rendezvous on " << job.rendezvous_addr << ", port chosen at launch; nothing is started\n";
  if (const std::optional<std::string> line = mode.dry_run_line()) std::cout << "trainrun: " << *line << "\n";
  for (const std::string& line : mode.agent_choices(planned)) std::cout << "trainrun: " << line << "\n";
  const std::string transport = transport_choice(options, plan, &std::getenv);
  if (!transport.empty()) std::cout << "trainrun: " << transport << "\n";
  std::cout << kRankMapHeader << "  command\n";
  const std::string cwd = job_directory(options);
  for (const RankSlot& slot : plan.ranks) {
    std::vector<std::string> words;
    for (const auto& [name, value] : rank_environment(slot, job)) {
      const bool secret = name == contract::kEnvSecret;
      const bool later = name == contract::kEnvRendezvousPort || name == contract::kEnvJobId ||
                         name == contract::kEnvTorchMasterPort || name == contract::kEnvTorchRunId;
      words.push_back(name + "=" + (secret ? "<secret>" : later ? "<at launch>" : value));
    }
    words.insert(words.end(), options.command.begin(), options.command.end());
    std::cout << rank_map_row(slot) << "cd " << display_quote(cwd) << " && " << display_join(words) << "\n";
  }
  return 0;
}

report::StackDumps::Options stack_dump_options(const Options& options) {
  report::StackDumps::Options o;
  o.on_stall_warning = options.stacks_on_stall;
  // The ranks' warning interval: the option, else what they inherit.
  const char* inherited = std::getenv(contract::kEnvStallWarning);
  if (options.stall_warning_s > 0) o.stall_warning_s = options.stall_warning_s;
  else if (inherited && std::atof(inherited) > 0) o.stall_warning_s = std::atof(inherited);
  o.output_dir = options.output_dir;
  return o;
}

// The launcher holds 3 descriptors per remote host (its SSH session and
// the pump's socketpair; the few pump threads' wake pipes are shared) and,
// while the ranks init, one rendezvous connection per rank (all at once:
// each waits for its peers' addresses; a formed rank lets go of its own);
// the local agent, which inherits the limit, 2 pipes per local rank
// (measured: -np 8 starts with 24 and fails with 20, -np 32 with 72 and
// 64). A limit below that would fail mid-start with "Too many open files":
// say so first, with the numbers (the server has already raised the soft
// limit to the hard one). How each host's agent is reached
// (cli/mode/agent_mode.h) says which hosts and ranks count.
std::optional<std::string> too_few_descriptors(const AgentMode& mode, const PlannedJob& planned) {
  const JobPlan& plan = planned.plan;
  std::size_t remote_hosts = 0, local_ranks = 0;
  for (std::size_t i = 0; i < plan.hosts.size(); ++i) remote_hosts += mode.reach(planned, i) == AgentReach::kSsh;
  for (const RankSlot& slot : plan.ranks) local_ranks += mode.reach(planned, slot.host_index) == AgentReach::kChild;
  const std::size_t ranks = plan.ranks.size();
  const std::size_t needed = std::max(3 * remote_hosts + ranks, 2 * local_ranks) + 8;
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur >= needed) {
    return std::nullopt;
  }
  return "a job of " + std::to_string(ranks) + " rank(s) (" + std::to_string(local_ranks) + " here, " +
         std::to_string(remote_hosts) + " remote host(s)) needs about " + std::to_string(needed) +
         " open files, but this process may open " + std::to_string(limit.rlim_cur) + " (ulimit -n; hard limit " +
         (limit.rlim_max == RLIM_INFINITY ? std::string("unlimited") : std::to_string(limit.rlim_max)) +
         "): raise it, e.g. ulimit -n " + std::to_string(needed);
}

// One run of a non-elastic job under --max-restarts (torchrun's whole-job
// restarts): which run this is, and the line that announced a restart.
struct Attempt {
  int number = 0;           // restarts before this run
  int max = 0;              // --max-restarts
  bool restarting = false;  // this run failed and the job starts again
};

// Whether `state`'s end starts the job again: a rank failed and restarts remain.
bool restarts(const JobState& state, const Attempt* attempt) {
  return attempt && attempt->number < attempt->max && state.outcome() == "rank_failed" && state.failed_rank();
}

// Before anything starts: the report's plan, the program, the OMP note (--verbose); a
// dry run ends here. Returns trainrun's exit status when the launch ends here.
std::optional<int> before_start(const Options& options, const PlannedJob& planned, const AgentMode& mode,
                                ReportRecorder& report, const Attempt* attempt) {
  const JobPlan& plan = planned.plan;
  const RemotePlan& remote = planned.remote;
  std::vector<bool> is_remote;
  for (std::size_t i = 0; i < plan.hosts.size(); ++i) {
    const AgentReach reach = mode.reach(planned, i);
    is_remote.push_back(reach == AgentReach::kSsh || reach == AgentReach::kRelayed);
  }
  report.planned(plan, is_remote);
  report.set_launcher(mode.name(planned));
  // Remote hosts look for the program themselves, in the pre-flight.
  const ProgramLookup program = find_job_program(options);
  if (!program.path && remote.any_local()) {
    std::cerr << "trainrun: error: " << program.error << "\n";
    report.failed("preflight_failed", "trainrun: error: " + program.error);
    return program.exit_code;
  }
  // Said with --verbose only, once per job (a dry run shows OMP_NUM_THREADS=1
  // in each rank's command): it is torchrun's default, and a note on every
  // run would teach users to skip trainrun's notes.
  if (options.verbose && plan.omp_threads_default && !options.dry_run && (!attempt || attempt->number == 0)) {
    std::cerr << "trainrun: note: OMP_NUM_THREADS=1 for every rank, as several share a host (set OMP_NUM_THREADS "
                 "or -x OMP_NUM_THREADS=N to choose)\n";
  }
  if (options.dry_run) return dry_run(options, planned, mode);
  if (const std::optional<std::string> line = mode.announcement()) std::cerr << *line << "\n";
  if (options.display_map && (!attempt || attempt->number == 0)) std::cerr << rank_map(plan.ranks, plan.hosts.size());
  return std::nullopt;
}

// What every rank is told: the rendezvous and its secret, the job id, and
// torch's MASTER_ADDR/MASTER_PORT.
JobEnv job_env(const Options& options, const PlannedJob& planned, const Attempt* attempt, const std::string& job_id,
               const rendezvous::Secret& secret, std::uint16_t rendezvous_port, const JobAgents& agents) {
  const JobPlan& plan = planned.plan;
  const RemotePlan& remote = planned.remote;
  JobEnv job = job_environment(options, plan, remote);
  add_elastic_environment(options, job);
  job.rendezvous_port = rendezvous_port;
  job.job_id = job_id;
  job.secret_hex = rendezvous::to_hex(secret);
  job.restart_count = attempt ? attempt->number : 0;
  // torch's env:// store runs in rank 0, so MASTER_ADDR is rank 0's host.
  const std::optional<MasterEndpoint> probed = agents.master();
  job.master_addr = probed                ? probed->address
                    : remote.is_remote(0) ? plan.hosts[0].host  // not probed: the host's name
                                          : job.rendezvous_addr;
  job.master_port = probed ? probed->port : net::free_tcp_port(job.rendezvous_addr);
  if (options.verbose) {
    const ProgramLookup program = find_job_program(options);
    std::cerr << "trainrun: job " << job.job_id << ": " << plan.ranks.size() << " rank(s) on " << plan.hosts.size()
              << " host(s), rendezvous " << job.rendezvous_addr << ":" << job.rendezvous_port << ", MASTER_ADDR "
              << job.master_addr << ":" << job.master_port << ", program "
              << program.path.value_or(options.command.front()) << "\n";
  }
  return job;
}

SupervisorOptions supervisor_options(const Options& options, ReportRecorder& report, const Attempt* attempt) {
  SupervisorOptions supervision;
  supervision.grace_s = options.grace_s;
  supervision.timeout_s = options.timeout_s;
  supervision.start_timeout_s = options.start_timeout_s;
  supervision.verbose = options.verbose;
  supervision.events = &report;
  if (attempt && attempt->number < attempt->max) {
    supervision.on_failure = "restarting the job (restart " + std::to_string(attempt->number + 1) + " of " +
                             std::to_string(attempt->max) + ")";
  }
  return supervision;
}

// Signals that came after the supervisor's last look: a stop signal while
// the job was torn down (a failure's teardown, maybe for a restart) counts
// as one that came during it; after a clean end it has nothing to stop.
// SIGUSR1/2 have no rank left to go to.
void take_late_signals(JobState& state, OutputRouter& output) {
  for (int sig : take_pending_signals({SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2})) {
    if (sig == SIGUSR1 || sig == SIGUSR2) {
      output.note("trainrun: received " + signal_name(sig) + " as the ranks ended: not forwarded");
    } else if (state.tearing_down()) {
      output.note("trainrun: received " + signal_name(sig) + " as the ranks stopped");
      state.stop_signal(sig);
    }
  }
}

// The agents started and supervised to the job's end, its summary printed,
// its output and report collected. Returns trainrun's exit status.
int run_job(const Options& options, const PlannedJob& planned, JobAgents& job_agents, ReportRecorder& report,
            elastic::ElasticStart* elastic, Attempt* attempt, rendezvous::HttpServer& server, const JobEnv& job) {
  const JobPlan& plan = planned.plan;
  const std::vector<JobSpec> jobs = host_jobs(options, plan, job);
  OutputRouter::Options output_options = job_output_options(options, plan);
  if (attempt && attempt->number > 0) {  // every attempt's bytes stay in the files
    output_options.attempt_banner =
        "==== trainrun: restart " + std::to_string(attempt->number) + " of " + std::to_string(attempt->max) + " ====";
  }
  OutputRouter output(output_options);
  std::vector<std::string> rank_hosts;
  for (const RankSlot& slot : plan.ranks) rank_hosts.push_back(display_name(plan.hosts[slot.host_index]));
  JobState state(static_cast<int>(plan.ranks.size()), rank_hosts);
  std::vector<std::unique_ptr<AgentLink>> agents = job_agents.links();
  Supervisor supervisor(supervisor_options(options, report, attempt), state, output, &server.table());
  if (EventSource* events = job_agents.events()) supervisor.attach_events(*events);
  report::StackDumps stacks(stack_dump_options(options), rank_hosts);
  supervisor.attach_stacks(stacks);
  std::unique_ptr<elastic::ElasticDriver> driver;
  if (elastic) {
    state.name_ranks_workers();
    driver = std::make_unique<elastic::ElasticDriver>(elastic->driver, elastic->hosts, plan.ranks, state, supervisor,
                                                      server.table(), elastic_starter(options, job, job_agents),
                                                      elastic->source);
    supervisor.attach_control(*driver);
    if (elastic->discovery) elastic->discovery->start();
  }
  supervisor.run(agents, jobs);
  take_late_signals(state, output);
  if (attempt) {
    attempt->restarting = restarts(state, attempt);
    // A stop signal during the restart's teardown ends the job instead.
    if (attempt->restarting && state.late_signal()) {
      state.end_by_late_signal();
      attempt->restarting = false;
    }
  }
  report.finished(state);
  // A restart was announced when the rank failed: no summary.
  const std::string summary = attempt && attempt->restarting ? "" : state.summary();
  const bool said = summary.find("did not reach the rendezvous") != std::string::npos || supervisor.noted(summary);
  if (!summary.empty() && !said) output.note(summary);
  if (options.verbose && summary.empty())
    output.note("trainrun: all " + std::to_string(plan.ranks.size()) + " rank(s) exited 0");
  output.drain(std::chrono::seconds(5));
  for (auto& agent : agents) agent->finish(std::chrono::seconds(2));
  report.lost_output(output.write_failures());
  report.lost_output(stacks.write_failures());
  report.collect(server.table());
  return state.exit_code();
}

// One run of the job: planned, checked, the rendezvous server and the
// agents started, supervised to the end. The job's signals stay blocked
// and the server runs from their start to every return (scope-bound).
int launch_planned(const Options& options, const AgentMode& mode, ReportRecorder& report,
                   elastic::ElasticStart* elastic, Attempt* attempt = nullptr) {
  std::string plan_error;
  const std::optional<PlannedJob> planned = plan_job(options, &plan_error);
  if (!planned) {
    report.failed("usage_error", plan_error);
    return kExitUsage;
  }
  if (const std::optional<int> ended = before_start(options, *planned, mode, report, attempt)) return *ended;

  // Before the server thread and the agents exist (they inherit the mask).
  const BlockedJobSignals blocked;
  const std::string job_id = rendezvous::random_hex(8);
  const rendezvous::Secret secret = mode.job_secret(job_id);
  rendezvous::HttpServer::Options server_options;
  server_options.bind_address = planned->remote.bind_address();
  rendezvous::HttpServer server(secret, server_options);  // stopped by its destructor, before the mask returns
  server.start();
  report.watch(server.table());
  if (options.verbose) {
    for (const std::string& line : mode.agent_choices(*planned)) std::cerr << "trainrun: " << line << "\n";
    const std::string transport = transport_choice(options, planned->plan, &std::getenv);
    if (!transport.empty()) std::cerr << "trainrun: " << transport << "\n";
  }
  if (const auto why = too_few_descriptors(mode, *planned)) {
    std::cerr << "trainrun: error: " << *why << "\n";
    report.failed("launch_failed", "trainrun: error: " + *why);
    return kExitLaunch;
  }
  AgentStart started = mode.start(options, *planned, report);
  if (!started.agents) return started.exit_status;
  const JobEnv job = job_env(options, *planned, attempt, job_id, secret, server.port(), *started.agents);
  return run_job(options, *planned, *started.agents, report, elastic, attempt, server, job);
}

// Runs a job on trainrun's agents, whichever mode starts them.
class Launcher final : public AgentLauncher {
 public:
  int launch(const Options& given, ReportRecorder& report, const AgentMode& mode) override;
};

int Launcher::launch(const Options& given, ReportRecorder& report, const AgentMode& mode) {
  Options options = given;
  if (options.elastic()) {  // local and SSH agents only (elastic_start.h)
    std::string error_line;
    int exit_code = 0;
    std::optional<elastic::ElasticStart> elastic =
        elastic::prepare_elastic(options, &error_line, &exit_code, mode.host_source());
    if (!elastic) {
      report.failed(exit_code == kExitUsage ? "usage_error" : "preflight_failed", error_line);
      return exit_code;
    }
    return launch_planned(options, mode, report, &*elastic);
  }
  // torchrun's --max-restarts: after a rank fails, every rank is stopped and
  // the whole job starts again through the same path (a fresh rendezvous
  // and job id), at most N times; the last failure ends the job.
  // The job's signals stay blocked from one attempt to the next (main blocks
  // them for the whole launch): a stop signal between attempts waits for the
  // next attempt's supervisor, which stops that attempt at once.
  Attempt attempt;
  attempt.max = options.dry_run ? 0 : std::max(options.reset_limit, 0);
  while (true) {
    const int status = launch_planned(options, mode, report, nullptr, &attempt);
    if (!attempt.restarting) return status;
    for (int sig : take_pending_signals({SIGUSR1, SIGUSR2})) {
      std::cerr << "trainrun: received " << signal_name(sig) << " while the job restarts: no rank to forward it to\n";
    }
    report.restarted();
    ++attempt.number;
  }
}

}  // namespace

int launch(const Options& options, ReportRecorder& report) {
  const LaunchModeChoice chosen = choose_launch_mode(options, &std::getenv);
  if (!chosen.mode) {
    std::cerr << "trainrun: error: " << chosen.error << "\n";
    report.failed("usage_error", "trainrun: error: " + chosen.error);
    return kExitUsage;
  }
  Launcher launcher;
  return chosen.mode->run(options, report, launcher);
}

}  // namespace trainrun::cli
