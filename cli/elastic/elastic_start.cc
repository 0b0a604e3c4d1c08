#include "cli/elastic/elastic_start.h"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <thread>

#include "cli/plan/host_list.h"
#include "cli/plan/job_plan.h"
#include "cli/job/job_state.h"
#include "cli/plan/local_host.h"
#include "contract/decimal.h"

namespace trainrun::cli::elastic {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kDiscoveryInterval = std::chrono::seconds(1);

struct Failure {
  std::string line;
  int code;
};

int total_slots(const std::vector<HostSlots>& hosts) {
  int n = 0;
  for (const HostSlots& h : hosts) n += h.slots;
  return n;
}

// The hosts of -H, --hostfile or this machine (--local: room for --max-np).
std::optional<std::vector<HostSlots>> given_hosts(const Options& o, std::string* error) {
  if (!o.hosts.empty()) {
    HostListResult parsed = parse_host_option(o.hosts, std::max(1, o.slots_per_host));
    if (!parsed.ok()) return *error = parsed.error, std::nullopt;
    return parsed.hosts;
  }
  if (!o.hostfile.empty()) {
    const std::optional<std::string> text = read_text_file(o.hostfile, error);
    if (!text) return std::nullopt;
    HostListResult parsed = parse_hostfile(*text, o.hostfile, std::max(1, o.slots_per_host));
    if (!parsed.ok()) return *error = parsed.error, std::nullopt;
    return parsed.hosts;
  }
  return std::vector<HostSlots>{{this_host_name(), std::max({o.np, o.max_np, o.min_np, 1}), ""}};
}

std::optional<Failure> check_flags(const Options& o) {
  if (o.launcher == "mpirun" || o.launcher == "srun") {
    return Failure{
        "elastic jobs (--min-np/--max-np/--host-discovery-script) need trainrun's own agents, "
        "not --launcher " +
            o.launcher,
        kExitUsage};
  }
  if (!o.discovery_script.empty() && (o.local || !o.hosts.empty() || !o.hostfile.empty())) {
    return Failure{"--host-discovery-script lists the hosts: it cannot be used with -H, --hostfile or --local",
                   kExitUsage};
  }
  // Fewer than 4 heartbeats would take a busy worker for a hung one.
  if (o.elastic_hang_timeout_s > 0 && o.elastic_hang_timeout_s < 2) {
    return Failure{"--elastic-hang-timeout " + detail::shortest_decimal(o.elastic_hang_timeout_s) +
                       ": at least 2 s (workers beat every 0.5 s), or 0 to turn it off",
                   kExitUsage};
  }
  return std::nullopt;
}

// The script's first answer, waiting for --min-np slots.
std::optional<Failure> discover(HostDiscovery& discovery, const Options& o, std::vector<HostSlots>& hosts) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<long long>(o.elastic_timeout_s * 1000));
  const int needed = std::max(o.min_np, 1);
  while (true) {
    DiscoveryRun run = discovery.first();
    if (!run.ok) {
      if (!run.stderr_text.empty()) std::cerr << run.stderr_text << (run.stderr_text.back() == '\n' ? "" : "\n");
      return Failure{run.error, kExitLaunch};
    }
    hosts = std::move(run.hosts);
    if (total_slots(hosts) >= needed) return std::nullopt;
    if (Clock::now() >= deadline) {
      return Failure{"elastic: " + std::to_string(total_slots(hosts)) + " slot(s) available, " +
                         std::to_string(needed) + " required (--min-np); waited " +
                         detail::shortest_decimal(o.elastic_timeout_s) + " s (--elastic-timeout)",
                     kExitLaunch};
    }
    std::this_thread::sleep_for(kDiscoveryInterval);
  }
}

// -np, --min-np and --max-np, each defaulting to the others as Horovod's do.
std::optional<Failure> settle_sizes(Options& o, int slots) {
  if (o.np == 0) o.np = std::min(o.max_np > 0 ? o.max_np : slots, slots);
  if (o.min_np == 0) o.min_np = std::min(o.np, slots);
  if (o.max_np == 0) o.max_np = std::max(o.np, o.min_np);
  if (o.np < o.min_np || o.np > o.max_np) {
    return Failure{"-np " + std::to_string(o.np) + " must lie between --min-np " + std::to_string(o.min_np) +
                       " and --max-np " + std::to_string(o.max_np),
                   kExitUsage};
  }
  return std::nullopt;
}

}  // namespace

std::optional<ElasticStart> prepare_elastic(Options& options, std::string* error_line, int* exit_code,
                                            HostSource* from_mode) {
  ElasticStart start;
  std::optional<Failure> failure = check_flags(options);
  if (!failure && from_mode) {
    start.source = from_mode;
    start.hosts = from_mode->hosts();
  } else if (!failure && !options.discovery_script.empty()) {
    start.discovery = std::make_unique<HostDiscovery>(options.discovery_script, kDiscoveryInterval,
                                                      std::chrono::seconds(10), std::max(1, options.slots_per_host));
    start.source = start.discovery.get();
    failure = discover(*start.discovery, options, start.hosts);
    if (!failure) options.hosts = host_option_text(start.hosts);
  } else if (!failure) {
    std::string error;
    if (auto hosts = given_hosts(options, &error)) start.hosts = std::move(*hosts);
    else failure = Failure{error, kExitUsage};
  }
  if (!failure) failure = settle_sizes(options, total_slots(start.hosts));
  if (failure) {
    *error_line = "trainrun: error: " + failure->line;
    *exit_code = failure->code;
    std::cerr << *error_line << "\n";
    return std::nullopt;
  }
  start.driver.min_np = options.min_np;
  start.driver.max_np = options.max_np;
  start.driver.reset_limit = options.reset_limit;
  start.driver.elastic_timeout = std::chrono::milliseconds(static_cast<long long>(options.elastic_timeout_s * 1000));
  start.driver.cooldown = std::chrono::milliseconds(static_cast<long long>(options.blacklist_cooldown_s * 1000));
  start.driver.hang_timeout = std::chrono::milliseconds(static_cast<long long>(options.elastic_hang_timeout_s * 1000));
  return start;
}

}  // namespace trainrun::cli::elastic
