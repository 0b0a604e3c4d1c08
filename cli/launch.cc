#include "cli/launch.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/host_list.h"
#include "cli/job_plan.h"
#include "cli/job_state.h"
#include "cli/local_agent_link.h"
#include "cli/local_host.h"
#include "cli/output_router.h"
#include "cli/program_path.h"
#include "cli/rank_env.h"
#include "cli/shell_words.h"
#include "cli/supervisor.h"
#include "rendezvous/auth.h"
#include "rendezvous/http_server.h"
#include "rendezvous/net.h"
#include "rendezvous/protocol.h"
#include "trainrun/error.h"

namespace trainrun::cli {
namespace {

std::optional<std::string> read_file(const std::string& path, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = std::strerror(errno);
    return std::nullopt;
  }
  std::stringstream content;
  content << in.rdbuf();
  return content.str();
}

std::string current_directory() {
  char path[PATH_MAX];
  return ::getcwd(path, sizeof path) ? path : ".";
}

JobEnv job_environment(const Options& options, const JobPlan& plan) {
  JobEnv job;
  job.size = static_cast<int>(plan.ranks.size());
  job.backend = options.backend;
  job.start_timeout_s = options.start_timeout_s;
  job.extra = plan.forwarded;
  return job;
}

// One JobSpec per host: each rank's argv and environment.
std::vector<JobSpec> host_jobs(const Options& options, const JobPlan& plan, const JobEnv& job) {
  std::vector<JobSpec> jobs(plan.hosts.size());
  for (JobSpec& spec : jobs) {
    spec.cwd = current_directory();
    spec.grace_ms = static_cast<std::uint32_t>(options.grace_s * 1000);
    spec.stdin_rank = 0;
  }
  for (const RankSlot& slot : plan.ranks) {
    RankSpec rank;
    rank.rank = static_cast<std::uint32_t>(slot.rank);
    rank.argv = options.command;
    for (const auto& [name, value] : rank_environment(slot, job)) rank.env.push_back(name + "=" + value);
    jobs[static_cast<std::size_t>(slot.host_index)].ranks.push_back(std::move(rank));
  }
  return jobs;
}

int dry_run(const Options& options, const JobPlan& plan) {
  JobEnv job = job_environment(options, plan);
  job.rendezvous_addr = "127.0.0.1";
  job.master_addr = "127.0.0.1";
  std::cout << "trainrun: dry run: " << plan.ranks.size() << " rank(s) on " << plan.hosts.size()
            << " host(s); rendezvous on 127.0.0.1, port chosen at launch; nothing is started\n";
  std::cout << "rank  host              local  cross  command\n";
  const std::string cwd = current_directory();
  for (const RankSlot& slot : plan.ranks) {
    std::vector<std::string> words;
    for (const auto& [name, value] : rank_environment(slot, job)) {
      const bool secret = name == protocol::kEnvSecret;
      const bool later = name == protocol::kEnvRendezvousPort || name == protocol::kEnvJobId ||
                         name == protocol::kEnvTorchMasterPort;
      words.push_back(name + "=" + (secret ? "<secret>" : later ? "<at launch>" : value));
    }
    words.insert(words.end(), options.command.begin(), options.command.end());
    char prefix[96];
    std::snprintf(prefix, sizeof prefix, "%4d  %-16s  %2d/%-2d  %2d/%-2d  ", slot.rank, slot.host.c_str(),
                  slot.local_rank, slot.local_size, slot.cross_rank, slot.cross_size);
    std::cout << prefix << "cd " << shell_quote(cwd) << " && " << shell_join(words) << "\n";
  }
  return 0;
}

}  // namespace

int launch(const Options& options) {
  PlanResult planned = make_plan(options, this_host_name(), &std::getenv, read_file);
  if (!planned.plan) {
    std::cerr << "trainrun: error: " << planned.error << "\n";
    return kExitUsage;
  }
  const JobPlan& plan = *planned.plan;
  for (const HostSlots& host : plan.hosts) {
    if (!is_local_host(host.host)) {
      std::cerr << "trainrun: error: host '" << display_name(host)
                << "' is not this machine, and this trainrun starts ranks on this machine only\n";
      return kExitUsage;
    }
  }
  const ProgramLookup program = find_program(options.command.front(), std::getenv("PATH"));
  if (!program.path) {
    std::cerr << "trainrun: error: " << program.error << "\n";
    return program.exit_code;
  }
  if (options.dry_run) return dry_run(options, plan);

  // Before the server thread and the agents exist (they inherit the mask).
  const sigset_t previous_mask = block_job_signals();
  const rendezvous::Secret secret = rendezvous::generate_secret();
  rendezvous::HttpServer::Options server_options;
  server_options.bind_address = "127.0.0.1";
  rendezvous::HttpServer server(secret, server_options);
  server.start();

  JobEnv job = job_environment(options, plan);
  job.rendezvous_addr = server_options.bind_address;
  job.rendezvous_port = server.port();
  job.job_id = rendezvous::random_hex(8);
  job.secret_hex = rendezvous::to_hex(secret);
  job.master_addr = server_options.bind_address;
  job.master_port = net::free_tcp_port(server_options.bind_address);
  const std::vector<JobSpec> jobs = host_jobs(options, plan, job);
  if (options.verbose) {
    std::cerr << "trainrun: job " << job.job_id << ": " << plan.ranks.size() << " rank(s) on "
              << plan.hosts.size() << " host(s), rendezvous " << job.rendezvous_addr << ":"
              << job.rendezvous_port << ", program " << *program.path << "\n";
  }

  OutputRouter::Options output_options;
  output_options.tag = options.tag_output;
  output_options.console_ranks = plan.console_ranks;
  output_options.directory = options.output_dir;
  output_options.size = static_cast<int>(plan.ranks.size());
  OutputRouter output(output_options);

  std::vector<std::string> rank_hosts;
  for (const RankSlot& slot : plan.ranks) rank_hosts.push_back(display_name(plan.hosts[slot.host_index]));
  JobState state(static_cast<int>(plan.ranks.size()), rank_hosts);
  std::vector<std::unique_ptr<AgentLink>> agents;
  for (const HostSlots& host : plan.hosts) agents.push_back(std::make_unique<LocalAgentLink>(display_name(host)));

  SupervisorOptions supervision;
  supervision.grace_s = options.grace_s;
  supervision.timeout_s = options.timeout_s;
  supervision.start_timeout_s = options.start_timeout_s;
  supervision.verbose = options.verbose;
  Supervisor supervisor(supervision, state, output, &server.table());
  supervisor.run(agents, jobs);

  const std::string summary = state.summary();
  if (!summary.empty() && summary.find("did not reach the rendezvous") == std::string::npos) output.note(summary);
  if (options.verbose && summary.empty()) output.note("trainrun: all " + std::to_string(plan.ranks.size()) + " rank(s) exited 0");
  output.drain(std::chrono::seconds(5));
  for (auto& agent : agents) agent->finish(std::chrono::seconds(2));
  server.stop();
  ::sigprocmask(SIG_SETMASK, &previous_mask, nullptr);
  return state.exit_code();
}

}  // namespace trainrun::cli
