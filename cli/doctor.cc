#include "cli/doctor.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <iostream>

#include "cli/agent/agent_protocol.h"
#include "cli/ssh/check_table.h"
#include "cli/plan/host_list.h"
#include "cli/job/job_state.h"
#include "cli/mode/planned_job.h"
#include "cli/ssh/preflight.h"
#include "cli/plan/program_path.h"
#include "cli/ssh/remote_plan.h"
#include "cli/job/supervisor.h"
#include "rendezvous/auth.h"
#include "rendezvous/http_server.h"
#include "os/net.h"
#include "trainrun/error.h"

namespace trainrun::cli {
namespace {

using Clock = std::chrono::steady_clock;

// The agent does all its connects at once, 3 s each; this is its bound.
constexpr std::chrono::seconds kReachWait{10};

// Sends a Reach frame to one agent and waits for its ReachResult.
std::optional<std::vector<std::string>> ask_reach(AgentLink& link, const std::vector<ReachTarget>& targets) {
  std::string out;
  append_frame(out, FrameType::Reach, 0, 0, encode_reach_request(targets));
  const net::Deadline deadline = Clock::now() + kReachWait;
  while (!out.empty()) {
    if (!net::wait_fd(link.write_fd(), POLLOUT, deadline)) return std::nullopt;
    const ssize_t n = ::write(link.write_fd(), out.data(), out.size());
    if (n < 0 && errno != EAGAIN && errno != EINTR) return std::nullopt;
    if (n > 0) out.erase(0, static_cast<std::size_t>(n));
  }
  FrameReader reader;
  char buffer[4096];
  while (net::wait_fd(link.read_fd(), POLLIN, deadline)) {
    const ssize_t n = ::read(link.read_fd(), buffer, sizeof buffer);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return std::nullopt;
    if (n > 0) reader.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
    while (auto frame = reader.next()) {
      if (frame->type == FrameType::ReachResult) return decode_reach_answer(frame->payload, targets.size());
    }
  }
  return std::nullopt;
}

// Who reaches whom: every remote host (through its agent) and, when the job
// has ranks here, this machine, to the rendezvous and each remote host.
bool reach_matrix(const RemotePlan& remote, RemoteAgents& agents, std::uint16_t rendezvous_port) {
  std::vector<std::string> to = {"rendezvous"};
  std::vector<ReachTarget> targets = {{"rendezvous", remote.bind_address(), rendezvous_port}};
  for (std::size_t i = 0; i < agents.links.size(); ++i) {
    to.push_back(agents.links[i]->host());
    targets.push_back({to.back(), agents.answers[i].address, agents.answers[i].listen_port});
  }
  std::vector<std::string> from;
  std::vector<std::vector<std::string>> rows;
  bool ok = true;
  for (std::size_t i = 0; i < agents.links.size(); ++i) {
    from.push_back(agents.links[i]->host());
    auto answer = ask_reach(*agents.links[i], targets);
    if (!answer) answer = std::vector<std::string>(targets.size(), "the agent did not answer");
    (*answer)[i + 1] = "-";  // itself
    for (const std::string& cell : *answer) ok = ok && (cell.empty() || cell == "-");
    rows.push_back(*answer);
  }
  if (remote.any_local()) {
    from.push_back("this machine");
    rows.emplace_back(1, "-");
    for (std::size_t j = 1; j < targets.size(); ++j) {
      int error = 0;
      const bool reached = net::connect_tcp(targets[j].address, std::to_string(targets[j].port),
                                            Clock::now() + std::chrono::seconds(3), &error)
                               .valid();
      rows.back().push_back(reached ? "" : net::errno_text(error));
      ok = ok && reached;
    }
  }
  std::cout << "\nreachability (each row connects to each column; hosts on their port in the ephemeral range):\n"
            << format_reach_matrix(from, to, rows);
  return ok;
}

std::vector<CheckRow> local_rows(const JobPlan& plan, const RemotePlan& remote, const Options& options) {
  std::vector<CheckRow> rows;
  for (std::size_t i = 0; i < plan.hosts.size(); ++i) {
    if (remote.is_remote(i)) continue;
    const std::string name = display_name(plan.hosts[i]);
    rows.push_back({name, "connect", "ok: this machine, no SSH", true});
    if (options.command.empty()) continue;
    const ProgramLookup program = find_job_program(options);
    rows.push_back({name, "program", program.path ? "ok: " + *program.path : program.error, program.path.has_value()});
  }
  return rows;
}

}  // namespace

int run_doctor(const Options& options) {
  const std::optional<PlannedJob> planned = plan_job(options);
  if (!planned) return kExitUsage;
  const JobPlan& plan = planned->plan;
  const RemotePlan& remote = planned->remote;
  const BlockedJobSignals blocked;  // until the end of the checks, however they end
  rendezvous::HttpServer::Options server_options;
  server_options.bind_address = remote.bind_address();
  rendezvous::HttpServer server(rendezvous::generate_secret(), server_options);
  server.start();
  std::cout << "trainrun doctor: " << plan.hosts.size() << " host(s)\n";
  for (const std::string& line : remote.choices()) std::cout << "  " << line << "\n";

  std::vector<CheckRow> rows = local_rows(plan, remote, options);
  RemoteAgents agents;
  if (remote.any_remote()) {
    ProbeRequest request = remote.probe(job_directory(options));
    request.listen = true;
    agents = start_remote_agents(remote.remote_hosts(), options.remote, request, false);
    if (agents.signal) std::_Exit(128 + agents.signal);  // host threads may still wait on the network
    rows.insert(rows.end(), agents.rows.begin(), agents.rows.end());
  }
  bool ok = std::all_of(rows.begin(), rows.end(), [](const CheckRow& row) { return row.ok; });
  std::cout << "\nchecks:\n" << format_check_table(rows);
  if (remote.any_remote() && agents.ok) ok = reach_matrix(remote, agents, server.port()) && ok;
  for (auto& link : agents.links) link->finish(std::chrono::seconds(2));
  server.stop();
  std::cout << "\ntrainrun doctor: " << (ok ? "all checks passed" : "some checks failed") << "\n";
  return ok ? 0 : 1;
}

}  // namespace trainrun::cli
