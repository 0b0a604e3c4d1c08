#include "cli/node/per_node_launch_mode.h"

#include <netdb.h>
#include <signal.h>
#include <sys/signalfd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "cli/job/job_state.h"
#include "cli/job/report_recorder.h"
#include "cli/mode/planned_job.h"
#include "cli/node/node0_mode.h"
#include "cli/node/node_client.h"
#include "cli/node/node_server.h"
#include "cli/plan/local_host.h"
#include "cli/plan/printable.h"
#include "cli/process/wait_status.h"
#include "os/net.h"
#include "trainrun/error.h"

namespace trainrun::cli::node {
namespace {

// How long node 0 waits, once the job is over, for the nodes to take its end.
constexpr std::chrono::seconds kEndLinger{5};

// The job's shared secret (--rdzv-secret-file, else TRAINRUN_RDZV_SECRET),
// when it has one; why it cannot be read, or "".
std::string load_secret(const NodeSettings& s, SharedSecret& secret) {
  std::string text, source;
  if (!s.secret_file.empty()) {
    source = "--rdzv-secret-file " + printable(s.secret_file, std::string::npos);
    std::string why;
    const std::optional<std::string> read = read_text_file(s.secret_file, &why);
    if (!read) return source + ": " + why;
    text = *read;
  } else if (s.secret_from_env) {
    source = kEnvRdzvSecret;
    text = std::getenv(kEnvRdzvSecret);
  } else {
    return "";
  }
  rendezvous::Secret derived{};
  if (std::string why = derive_secret(text, derived); !why.empty()) return source + ": the secret " + why;
  secret = derived;
  return "";
}

// master_host as a numeric address to bind: its first address when it is
// this machine's, else every address (a name of a service that forwards
// here: the nodes reach node 0 through it).
std::string bind_address(const std::string& host, bool local) {
  if (!local) return host.find(':') != std::string::npos ? "::" : "0.0.0.0";
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &result) != 0 || !result) return host;
  char text[NI_MAXHOST] = {};
  ::getnameinfo(result->ai_addr, result->ai_addrlen, text, sizeof text, nullptr, 0, NI_NUMERICHOST);
  ::freeaddrinfo(result);
  return text;
}

struct Listening {
  UniqueFd fd;        // this node is node 0; none: another node is
  std::string where;  // what it bound, for --verbose
  std::string error;  // node 0 cannot listen: the job cannot run here
};

// Node 0 is --node-rank 0; without a rank, the node whose address the
// endpoint names, unless another trainrun here listens there already (it
// is node 0, this one joins it).
Listening listen_as_node0(const NodeSettings& s) {
  Listening l;
  const bool local = is_local_host(s.master_host);
  if (s.node_rank > 0 || (s.node_rank < 0 && !local)) return l;
  const std::string address = bind_address(s.master_host, local);
  int error = 0;
  l.fd = net::listen_tcp_on(address, s.master_port, true, &error);
  l.where = address + ":" + std::to_string(s.master_port) +
            (local ? "" : " (" + s.master_host + " is not this machine's: every address here)");
  if (l.fd || (s.node_rank < 0 && error == EADDRINUSE)) return l;
  l.error = "node 0 cannot serve the nodes at " + address + ":" + std::to_string(s.master_port) + ": " +
            net::errno_text(error) +
            (error == EADDRINUSE ? " (another job's node 0? choose another --master-port)" : "");
  return l;
}

sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGQUIT}) sigaddset(&set, sig);
  return set;
}

// What a node that is not node 0 runs of the job itself: its command, its
// directory, its -x (and the build tree's PYTHONPATH), as planned here.
std::optional<OwnJob> own_job(const Options& options, int nproc, const SharedSecret& secret, std::string* error) {
  Options here = options;
  here.joined_hosts = {{this_host_name(), nproc, "", ""}};
  here.np = nproc;
  here.nproc_per_node = here.nnodes = here.max_nnodes = here.npernode = 0;
  here.rank_filter.clear();
  here.node = {};
  PlanResult planned = make_plan(here, this_host_name(), &std::getenv, read_text_file);
  if (!planned.plan) {
    *error = planned.error;
    return std::nullopt;
  }
  return OwnJob{options.command, job_directory(options), planned.plan->forwarded, secret};
}

// Node 0 once the nodes have joined: the options of the job on them; with
// --nnodes MIN:MAX an elastic job of MIN to MAX nodes' ranks (node 0's
// count each).
Options on_nodes(const Options& options, const NodeSettings& s, const NodeServer& server, int nproc) {
  Options o = options;
  o.joined_hosts = server.hosts();
  o.np = 0;
  for (const HostSlots& node : o.joined_hosts) o.np += node.slots;
  if (s.elastic) {
    o.min_np = s.nnodes * nproc;
    o.max_np = s.max_nnodes * nproc;
  }
  o.nproc_per_node = o.nnodes = o.max_nnodes = o.npernode = 0;
  o.node = {};
  return o;
}

int serve(const NodeSettings& s, const Options& options, ReportRecorder& report, AgentLauncher& launcher,
          Listening listening, const SharedSecret& secret, int nproc) {
  if (!secret) {
    std::cerr << "trainrun: note: no shared secret (--rdzv-secret-file or " << kEnvRdzvSecret
              << "): any process that reaches " << s.endpoint()
              << " may join this job as a node, as with torchrun; each node runs only its own command\n";
  }
  if (options.verbose) {
    std::cerr << "trainrun: per-node launch (" << s.source << "): node 0 of " << s.nnodes << ", serving the nodes at "
              << listening.where << "\n";
  }
  NodeServer server(s, secret, std::move(listening.fd), {0, this_host_name(), this_host_name(), "", nproc},
                    options.verbose);
  NodeServer::Joined joined;
  {
    const sigset_t set = stop_signals();
    const UniqueFd signals(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
    joined = server.join(signals.get());
  }
  if (!joined.ok) {
    const int status = joined.signal ? 128 + joined.signal : kExitLaunch;
    const std::string line = joined.signal ? "trainrun: received " + signal_name(joined.signal) +
                                                 " while the nodes joined: nothing was started"
                                           : "trainrun: error: " + joined.error;
    std::cerr << line << "\n";
    report.failed(joined.signal ? "signal" : "launch_failed", line);
    server.end({status, report.outcome(), line}, kEndLinger);
    return status;
  }
  Node0Mode mode(server, secret, s.elastic);
  int status = kExitLaunch;
  try {
    status = launcher.launch(on_nodes(options, s, server, nproc), report, mode);
  } catch (const Error& e) {
    server.end({kExitLaunch, "launch_failed", std::string("trainrun: error: ") + e.what()}, kEndLinger);
    throw;
  }
  server.end({status, report.outcome(), report.summary()}, kEndLinger);
  return status;
}

}  // namespace

int PerNodeLaunchMode::run(const Options& options, ReportRecorder& report, AgentLauncher& launcher) const {
  const NodeSettings& s = settings_;
  report.set_launcher("per-node");
  for (const std::string& note : s.notes) std::cerr << "trainrun: note: " << note << "\n";
  const auto usage = [&](const std::string& why) {
    std::cerr << "trainrun: error: " << why << "\n";
    report.failed("usage_error", "trainrun: error: " + why);
    return kExitUsage;
  };
  SharedSecret secret;
  if (std::string why = load_secret(s, secret); !why.empty()) return usage(why);
  const int nproc = options.nproc_per_node > 0 ? options.nproc_per_node : options.np > 0 ? options.np : 1;
  if (options.dry_run) {
    std::cout << "trainrun: dry run: per-node launch (" << s.source << "), " << nproc << " rank(s) on this node: node "
              << (s.node_rank >= 0 ? std::to_string(s.node_rank) : "?") << " of " << s.nnodes
              << (s.node_rank == 0 ? " serves" : " joins") << " node 0 at " << s.endpoint() << "; nothing is started\n";
    return 0;
  }
  Listening listening = listen_as_node0(s);
  if (!listening.error.empty()) {
    std::cerr << "trainrun: error: " << listening.error << "\n";
    report.failed("launch_failed", "trainrun: error: " + listening.error);
    return kExitLaunch;
  }
  if (listening.fd) return serve(s, options, report, launcher, std::move(listening), secret, nproc);
  std::string error;
  std::optional<OwnJob> own = own_job(options, nproc, secret, &error);
  if (!own) return usage(error);
  if (options.verbose)
    std::cerr << "trainrun: per-node launch (" << s.source << "): joining node 0 at " << s.endpoint() << "\n";
  return run_node_client({s, std::move(*own), nproc, this_host_name(), options.verbose}, report);
}

LaunchModeChoice choose_per_node(const Options& options, const GetEnv& getenv) {
  NodeDecision decision = decide_node_mode(options, getenv);
  if (!decision.settings) return {nullptr, decision.error};
  return {std::make_unique<PerNodeLaunchMode>(std::move(*decision.settings)), ""};
}

}  // namespace trainrun::cli::node
