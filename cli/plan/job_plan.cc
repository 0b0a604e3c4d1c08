#include "cli/plan/job_plan.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "cli/plan/host_list.h"
#include "cli/plan/printable.h"
#include "contract/decimal.h"
#include "contract/environment.h"
#include "contract/switch_points.h"
#include "contract/world.h"
#include "os/unique_fd.h"
#include "trainrun/error.h"

namespace trainrun::cli {
namespace {

bool parse_int(std::string_view text, int& value) {
  const auto r = std::from_chars(text.data(), text.data() + text.size(), value);
  return !text.empty() && r.ec == std::errc() && r.ptr == text.data() + text.size();
}

std::string hosts_text(const std::vector<HostSlots>& hosts) {
  std::string out;
  for (const auto& h : hosts) out += (out.empty() ? "" : ",") + display_name(h) + ":" + std::to_string(h.slots);
  return out;
}

// The engine's and the transport's launcher flags, as the variables the
// library reads (contract/environment.h); only those the user gave.
void append_engine_settings(const Options& o, EnvList& env) {
  namespace p = contract;
  if (o.fusion_threshold_mb >= 0) {
    env.emplace_back(p::kEnvFusionThreshold,
                     std::to_string(static_cast<long long>(o.fusion_threshold_mb * 1024 * 1024)));
  }
  if (o.cycle_time_ms >= 0) env.emplace_back(p::kEnvCycleTimeMs, detail::shortest_decimal(o.cycle_time_ms));
  if (o.cache_capacity >= 0) env.emplace_back(p::kEnvCacheCapacity, std::to_string(o.cache_capacity));
  if (!o.timeline.empty()) {
    // Rank 0 may run in another directory (or on another host): make it absolute.
    std::string path = o.timeline;
    if (path.front() != '/') {
      char cwd[4096];
      if (::getcwd(cwd, sizeof cwd)) path = std::string(cwd) + "/" + path;
    }
    env.emplace_back(p::kEnvTimeline, path);
  }
  if (o.timeline_mark_cycles) env.emplace_back(p::kEnvTimelineMarkCycles, "1");
  if (o.stall_warning_s >= 0) env.emplace_back(p::kEnvStallWarning, detail::shortest_decimal(o.stall_warning_s));
  if (o.stall_shutdown_s >= 0) env.emplace_back(p::kEnvStallShutdown, detail::shortest_decimal(o.stall_shutdown_s));
  if (o.straggler_warning_pct >= 0) {
    env.emplace_back(p::kEnvStragglerWarning, detail::shortest_decimal(o.straggler_warning_pct));
  }
  if (!o.shm) env.emplace_back(p::kEnvShm, "0");
  if (o.check_calls) env.emplace_back(p::kEnvCheckCalls, "1");
  if (!o.switch_points.empty()) env.emplace_back(p::kEnvSwitchPoints, o.switch_points);
  if (o.bind_to != "none") env.emplace_back(p::kEnvBindTo, o.bind_to);
  if (o.report_bindings) env.emplace_back(p::kEnvReportBindings, "1");
}

// Why -x may not give a rank `name`, or "": trainrun sets it itself, after
// the forwarded variables, so a forwarded value would be silently replaced.
std::string refused_variable(const std::string& name, const Options& o) {
  namespace p = contract;
  for (const char* set : {p::kEnvRank,
                          p::kEnvSize,
                          p::kEnvLocalRank,
                          p::kEnvLocalSize,
                          p::kEnvCrossRank,
                          p::kEnvCrossSize,
                          p::kEnvHostname,
                          p::kEnvRendezvousAddr,
                          p::kEnvRendezvousPort,
                          p::kEnvJobId,
                          p::kEnvSecret,
                          p::kEnvHorovodRank,
                          p::kEnvHorovodSize,
                          p::kEnvHorovodLocalRank,
                          p::kEnvHorovodLocalSize,
                          p::kEnvHorovodCrossRank,
                          p::kEnvHorovodCrossSize,
                          p::kEnvTorchRank,
                          p::kEnvTorchWorldSize,
                          p::kEnvTorchLocalRank,
                          p::kEnvTorchLocalWorldSize,
                          p::kEnvTorchMasterAddr,
                          p::kEnvTorchMasterPort,
                          p::kEnvTorchGroupRank,
                          p::kEnvTorchGroupWorldSize,
                          p::kEnvTorchRoleRank,
                          p::kEnvTorchRoleWorldSize,
                          p::kEnvTorchRestartCount,
                          p::kEnvTorchMaxRestarts,
                          p::kEnvTorchRunId}) {
    if (name == set) return "trainrun sets this variable for every rank; it cannot be forwarded";
  }
  // Job-wide settings (contract::kJobEnv and the engine's) stay the user's
  // to forward unless the option that sets them is given too. mpirun's
  // ranks get TRAINRUN_START_TIMEOUT only from the user.
  const struct {
    const char* name;
    const char* option;
    bool given;
  } by_option[] = {
      {p::kEnvStartTimeout, "--start-timeout", o.launcher != "mpirun"},
      {p::kEnvBackend, "--backend", !o.backend.empty()},
      {p::kEnvNetwork, "--network", !o.remote.network.empty()},
      {p::kEnvIface, "--network-interface", !o.remote.network_interface.empty()},
      {p::kEnvFusionThreshold, "--fusion-threshold-mb", o.fusion_threshold_mb >= 0},
      {p::kEnvCycleTimeMs, "--cycle-time-ms", o.cycle_time_ms >= 0},
      {p::kEnvCacheCapacity, "--cache-capacity", o.cache_capacity >= 0},
      {p::kEnvTimeline, "--timeline", !o.timeline.empty()},
      {p::kEnvTimelineMarkCycles, "--timeline-mark-cycles", o.timeline_mark_cycles},
      {p::kEnvStallWarning, "--stall-warning", o.stall_warning_s >= 0},
      {p::kEnvStallShutdown, "--stall-shutdown", o.stall_shutdown_s >= 0},
      {p::kEnvStragglerWarning, "--straggler-warning", o.straggler_warning_pct >= 0},
      {p::kEnvShm, "--no-shm", !o.shm},
      {p::kEnvCheckCalls, "--check-calls", o.check_calls},
      {p::kEnvSwitchPoints, "--switch-points", !o.switch_points.empty()},
      {p::kEnvBindTo, "--bind-to", o.bind_to != "none"},
      {p::kEnvReportBindings, "--report-bindings", o.report_bindings},
  };
  for (const auto& v : by_option) {
    if (v.given && name == v.name) {
      return std::string("trainrun sets this variable for every rank from ") + v.option +
             "; it cannot be forwarded (use " + v.option + ")";
    }
  }
  return "";
}

// torchrun's --nnodes and --nproc-per-node (every host runs P ranks): the
// hosts' slots and the rank count `np` (0: not given yet); why not, or "".
std::string torchrun_shape(const Options& o, bool hosts_given, std::vector<HostSlots>& hosts, int& np) {
  const std::string nnodes = "--nnodes " + std::to_string(o.nnodes);
  if (o.nnodes > 0 && hosts_given && o.nnodes != static_cast<int>(hosts.size())) {
    return nnodes + " does not match the " + std::to_string(hosts.size()) + " host(s) of " +
           (o.hosts.empty() ? "--hostfile" : "-H") + " (" + hosts_text(hosts) + ")";
  }
  if (o.nproc_per_node <= 0) return "";
  for (HostSlots& h : hosts) h.slots = o.nproc_per_node;
  const int total = o.nproc_per_node * static_cast<int>(hosts.size());
  if (np > 0 && np != total) {
    return "-np " + std::to_string(np) + " does not match --nproc-per-node " + std::to_string(o.nproc_per_node) +
           " x " + std::to_string(hosts.size()) + " host(s) = " + std::to_string(total) + " (give one of them)";
  }
  np = total;
  return "";
}

// mpirun's -npernode N (-N, --pernode, --map-by ppr:N:node): every host
// gets N slots, and -np, when given, may fill fewer but not more; why
// not, or "".
std::string mpirun_per_node(const Options& o, bool hosts_given, std::vector<HostSlots>& hosts, int& np) {
  if (o.ppr_socket > 0 && hosts_given) {
    return "--map-by ppr:" + std::to_string(o.ppr_socket) +
           ":socket counts this machine's sockets, so every rank must run here; for other hosts give the ranks per "
           "host and the binding: -npernode N --bind-to socket";
  }
  if (o.npernode <= 0) return "";
  if (o.nproc_per_node > 0 && o.nproc_per_node != o.npernode) {
    return o.npernode_option + " does not match --nproc-per-node " + std::to_string(o.nproc_per_node);
  }
  for (HostSlots& h : hosts) h.slots = o.npernode;
  const int total = o.npernode * static_cast<int>(hosts.size());
  if (np > total) {
    return "-np " + std::to_string(np) + " exceeds " + o.npernode_option + " x " + std::to_string(hosts.size()) +
           " host(s) = " + std::to_string(total) + " rank(s)";
  }
  if (np <= 0) np = total;
  return "";
}

// torchrun's default: one OpenMP thread per rank when ranks share a host,
// unless the user set OMP_NUM_THREADS (here or with -x).
bool default_omp_threads(const JobPlan& plan, const GetEnv& getenv) {
  if (getenv(contract::kEnvOmpNumThreads)) return false;
  for (const auto& [name, value] : plan.forwarded) {
    if (name == contract::kEnvOmpNumThreads) return false;
  }
  for (const RankSlot& slot : plan.ranks) {
    if (slot.local_size > 1) return true;
  }
  return false;
}

}  // namespace

std::string transport_choice(const Options& options, const JobPlan& plan, const GetEnv& getenv) {
  if (plan.ranks.size() < 2 || options.backend == "mpi") return "";
  const char* shm = getenv(contract::kEnvShm);
  const bool off = !options.shm || (shm && std::string(shm) == "0");
  const std::string what = options.backend == "nccl" ? "host buffers (tcp)" : "collectives (tcp)";
  if (off) {
    return what + ": TCP mesh between every pair of ranks (" +
           (options.shm ? std::string(contract::kEnvShm) + "=0" : std::string("--no-shm")) + ")";
  }
  if (plan.hosts.size() == 1) {
    return what + ": shared memory among the " + std::to_string(plan.ranks.size()) + " ranks on " +
           display_name(plan.hosts[0]) + " (--no-shm: TCP mesh)";
  }
  std::vector<int> per_host(plan.hosts.size(), 0);
  for (const RankSlot& slot : plan.ranks) ++per_host[slot.host_index];
  for (int ranks : per_host) {
    if (ranks != per_host[0] || ranks < 2) {
      return what +
             ": TCP mesh between every pair of ranks (two-level needs the same number of ranks, 2 or more, "
             "on every host)";
    }
  }
  // The ranks choose alike (contract/switch_points.h), from the same override.
  const char* env_spec = getenv(contract::kEnvSwitchPoints);
  const std::string spec = !options.switch_points.empty() ? options.switch_points : env_spec ? env_spec : "";
  std::string error;
  const auto points = detail::switch_points(static_cast<int>(per_host.size()), per_host[0], spec, error);
  return what + ": two-level allreduce (shared memory within each host, TCP mesh between hosts): " +
         (points ? detail::describe(*points) : "bad " + std::string(contract::kEnvSwitchPoints) + ": " + error) +
         "; allgather and reducescatter two-level when ranks are numbered host by host" +
         (points ? " (reducescatter: local rank 0 carrying the host's share across below " +
                       detail::byte_size_text(points->reducescatter_split_min) + ")"
                 : "") +
         "; TCP mesh for the other collectives";
}

std::optional<std::string> read_text_file(const std::string& path, std::string* error) {
  // O_NONBLOCK: a FIFO nobody writes to opens at once (and reads as empty)
  // instead of blocking trainrun before it has said anything.
  const UniqueFd file(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  const int fd = file.get();
  if (fd < 0) {
    *error = std::strerror(errno);
    return std::nullopt;
  }
  auto fail = [&](std::string why) {
    *error = std::move(why);
    return std::nullopt;
  };
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) return fail("is a directory");
  if (!set_nonblocking(fd, false)) return fail(std::string("fcntl: ") + std::strerror(errno));
  // Never more than the limit in memory, whatever the file is (/dev/zero, a pipe).
  std::string content;
  char buffer[65536];
  while (true) {
    const std::size_t want = std::min(sizeof buffer, kMaxHostfileBytes + 1 - content.size());
    const ssize_t n = ::read(fd, buffer, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(std::strerror(errno));
    if (n == 0) break;
    content.append(buffer, static_cast<std::size_t>(n));
    if (content.size() > kMaxHostfileBytes) {
      return fail("larger than " + std::to_string(kMaxHostfileBytes >> 20) + " MiB (the most trainrun reads)");
    }
  }
  return content;
}

std::optional<std::set<int>> parse_rank_list(const std::string& text, int size, std::string* error) {
  std::set<int> ranks;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string_view item = std::string_view(text).substr(start, end - start);
    const std::size_t dash = item.find('-');
    int first = 0, last = 0;
    const bool ok = dash == std::string_view::npos
                        ? parse_int(item, first) && (last = first, true)
                        : parse_int(item.substr(0, dash), first) && parse_int(item.substr(dash + 1), last);
    if (!ok || first < 0 || last < first) {
      *error = quoted(item) + " is not a rank or a range like 2-5";
      return std::nullopt;
    }
    if (last >= size) {
      *error = "rank " + std::to_string(last) + " is not below -np " + std::to_string(size);
      return std::nullopt;
    }
    for (int r = first; r <= last; ++r) ranks.insert(r);
    start = end + 1;
  }
  return ranks;
}

// Why the ranks would refuse a trainrun setting handed to them (-x, --env,
// horovodrun's options, a config file), read as the ranks will read it
// (world_from_env); "" when they take them all.
std::string refused_by_ranks(const std::vector<std::pair<std::string, std::string>>& forwarded) {
  const std::string prefix = "TRAINRUN_";
  auto lookup = [&](const char* name) -> const char* {
    if (std::string(name).rfind(prefix, 0) != 0) return nullptr;
    const char* value = nullptr;
    for (const auto& [n, v] : forwarded) {
      if (n == name) value = v.c_str();  // the last one wins, as in the ranks' environment
    }
    return value;
  };
  try {
    (void)detail::world_from_env(lookup);
  } catch (const Error& e) {
    return std::string(e.what()) + " (a setting for the ranks, which would refuse it)";
  }
  return "";
}

namespace {

// The job's hosts: a per-node launch's nodes, -H, --hostfile, or this
// machine with -np ranks; why not, or "".
std::string plan_hosts(const Options& o, const std::string& local_host_name, const ReadFile& read_file,
                       std::vector<HostSlots>& hosts) {
  if (!o.joined_hosts.empty()) {
    hosts = o.joined_hosts;  // in node order (cli/node)
  } else if (!o.hosts.empty()) {
    HostListResult parsed = parse_host_option(o.hosts, std::max(1, o.slots_per_host));
    if (!parsed.ok()) return parsed.error;
    hosts = parsed.hosts;
  } else if (!o.hostfile.empty()) {
    std::string why;
    const auto content = read_file(o.hostfile, &why);
    if (!content) return "--hostfile " + printable(o.hostfile, std::string::npos) + ": " + why;
    HostListResult parsed = parse_hostfile(*content, o.hostfile, std::max(1, o.slots_per_host));
    if (!parsed.ok()) return parsed.error;
    hosts = parsed.hosts;
  } else {
    if (o.nnodes > 1) {
      return "--nnodes " + std::to_string(o.nnodes) +
             " needs the hosts, -H h1,h2 or --hostfile: trainrun starts every host's ranks itself";
    }
    const int ranks = o.np > 0 ? o.np : o.nproc_per_node > 0 ? o.nproc_per_node : o.npernode;
    if (ranks < 1) return "-np N is required (how many ranks to start)";
    hosts = {{local_host_name, ranks, "", ""}};
  }
  return "";
}

}  // namespace

PlanResult make_plan(const Options& o, const std::string& local_host_name, const GetEnv& getenv,
                     const ReadFile& read_file) {
  PlanResult result;
  auto fail = [&](std::string message) {
    result.error = std::move(message);
    return result;
  };
  if (!o.hosts.empty() && !o.hostfile.empty()) return fail("-H and --hostfile cannot be used together");
  if (o.local && (!o.hosts.empty() || !o.hostfile.empty())) {
    return fail("--local runs every rank here; it cannot be combined with -H or --hostfile");
  }
  JobPlan plan;
  if (std::string why = plan_hosts(o, local_host_name, read_file, plan.hosts); !why.empty()) return fail(why);
  int np = o.np;
  const bool hosts_given = !o.hosts.empty() || !o.hostfile.empty();
  if (auto why = torchrun_shape(o, hosts_given, plan.hosts, np); !why.empty()) return fail(why);
  if (auto why = mpirun_per_node(o, hosts_given, plan.hosts, np); !why.empty()) return fail(why);
  int slots = 0;
  for (const auto& h : plan.hosts) slots += h.slots;
  if (np <= 0) np = slots;
  // mpirun's --oversubscribe: the ranks beyond the slots go round-robin over the hosts.
  for (std::size_t h = 0; o.oversubscribe && slots < np; h = (h + 1) % plan.hosts.size(), ++slots) {
    ++plan.hosts[h].slots;
  }
  if (np > slots) {
    return fail("-np " + std::to_string(np) + " exceeds the " + std::to_string(slots) + " slot(s) of " +
                hosts_text(plan.hosts) + " (--oversubscribe allows it)");
  }
  plan.ranks = plan_ranks(plan.hosts, np, o.map_by == "node" ? MapBy::Node : MapBy::Slot);
  // Hosts after the last one used get no rank: drop them.
  int last_host = 0;
  for (const RankSlot& slot : plan.ranks) last_host = std::max(last_host, slot.host_index);
  plan.hosts.resize(static_cast<std::size_t>(last_host + 1));

  if (!o.rank_filter.empty()) {
    std::string why;
    auto ranks = parse_rank_list(o.rank_filter, np, &why);
    if (!ranks) return fail("--rank-filter: " + why);
    plan.console_ranks = std::move(*ranks);
  }
  for (const std::string& item : o.env_forward) {
    const std::size_t eq = item.find('=');
    const std::string name = item.substr(0, eq);
    if (!is_env_name(name)) return fail("-x " + printable(item) + ": " + quoted(name) + " is not a variable name");
    if (auto why = refused_variable(name, o); !why.empty()) return fail("-x " + name + ": " + why);
    if (eq != std::string::npos) {
      plan.forwarded.emplace_back(name, item.substr(eq + 1));
    } else if (const char* value = getenv(name.c_str())) {
      plan.forwarded.emplace_back(name, value);
    } else {
      return fail("-x " + name + ": " + name + " is not set in trainrun's environment (use -x " + name + "=VALUE)");
    }
  }
  plan.omp_threads_default = default_omp_threads(plan, getenv);
  if (plan.omp_threads_default) plan.forwarded.emplace_back(contract::kEnvOmpNumThreads, "1");
  append_engine_settings(o, plan.forwarded);
  if (std::string why = refused_by_ranks(plan.forwarded); !why.empty()) return fail(why);
  result.plan = std::move(plan);
  return result;
}

}  // namespace trainrun::cli
