#include "cli/agent/cpu_binding.h"

#include <sched.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <tuple>

#include "cli/report/stack_text.h"

namespace trainrun::cli {
namespace {

constexpr int kMaxNodes = 256;

std::optional<std::string> read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return line;
}

int read_int(const std::string& path, int fallback) {
  const auto line = read_line(path);
  int value = 0;
  if (!line) return fallback;
  const auto r = std::from_chars(line->data(), line->data() + line->size(), value);
  return r.ec == std::errc() ? value : fallback;
}

// The CPUs this process may run on (its affinity mask, e.g. a cgroup's cpuset).
std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

}  // namespace

std::vector<int> parse_cpu_list(const std::string& text) {
  std::vector<int> cpus;
  std::size_t start = 0;
  const std::string trimmed = text.substr(0, text.find_last_not_of(" \n") + 1);
  while (start < trimmed.size()) {
    std::size_t end = trimmed.find(',', start);
    if (end == std::string::npos) end = trimmed.size();
    const std::string item = trimmed.substr(start, end - start);
    int first = 0, last = 0;
    const std::size_t dash = item.find('-');
    const char* b = item.data();
    const char* e = b + item.size();
    const char* mid = dash == std::string::npos ? e : b + dash;
    if (std::from_chars(b, mid, first).ec != std::errc()) return {};
    last = first;
    if (mid != e && std::from_chars(mid + 1, e, last).ec != std::errc()) return {};
    if (last < first || last - first > CPU_SETSIZE) return {};
    for (int cpu = first; cpu <= last; ++cpu) cpus.push_back(cpu);
    start = end + 1;
  }
  return cpus;
}

std::string format_cpu_list(const std::vector<int>& cpus) { return report::rank_ranges(cpus); }

CpuTopology read_cpu_topology(const std::string& sys) {
  std::map<int, int> node_of;
  for (int node = 0; node < kMaxNodes; ++node) {
    const auto list = read_line(sys + "/node/node" + std::to_string(node) + "/cpulist");
    if (!list) continue;  // node ids may have gaps
    for (int cpu : parse_cpu_list(*list)) node_of[cpu] = node;
  }
  CpuTopology topology;
  for (int id : allowed_cpus()) {
    const std::string dir = sys + "/cpu/cpu" + std::to_string(id) + "/topology/";
    CpuTopology::Cpu cpu;
    cpu.id = id;
    cpu.package = read_int(dir + "physical_package_id", 0);
    cpu.core = read_int(dir + "core_id", id);
    cpu.node = node_of.count(id) ? node_of[id] : 0;
    topology.cpus.push_back(cpu);
  }
  return topology;
}

std::optional<CpuBinding> choose_binding(const CpuTopology& topology, const std::string& bind_to, int local_rank) {
  // Each unit's key, and its CPUs; units ordered by their first CPU.
  std::map<std::tuple<int, int>, std::vector<int>> units;
  const char* name = bind_to == "core"       ? "core"
                     : bind_to == "hwthread" ? "hwthread"
                     : bind_to == "socket"   ? "socket"
                     : bind_to == "numa"     ? "NUMA node"
                                             : nullptr;
  if (!name || topology.cpus.empty() || local_rank < 0) return std::nullopt;
  const bool one_each = bind_to == "core" || bind_to == "hwthread";  // reused when ranks outnumber them
  for (const CpuTopology::Cpu& cpu : topology.cpus) {
    const auto key = bind_to == "core"       ? std::make_tuple(cpu.package, cpu.core)
                     : bind_to == "hwthread" ? std::make_tuple(cpu.id, 0)
                     : bind_to == "socket"   ? std::make_tuple(cpu.package, 0)
                                             : std::make_tuple(cpu.node, 0);
    units[key].push_back(cpu.id);
  }
  std::vector<std::pair<std::tuple<int, int>, std::vector<int>>> ordered(units.begin(), units.end());
  std::sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) { return a.second[0] < b.second[0]; });
  const std::size_t index = static_cast<std::size_t>(local_rank) % ordered.size();
  CpuBinding binding;
  binding.cpus = ordered[index].second;
  binding.shared = one_each && static_cast<std::size_t>(local_rank) >= ordered.size();
  const int number = one_each ? static_cast<int>(index) : std::get<0>(ordered[index].first);
  binding.unit = std::string(name) + " " + std::to_string(number);
  return binding;
}

std::string binding_line(const std::string& rank, const std::string& host, const std::optional<CpuBinding>& binding,
                         const CpuTopology& topology) {
  std::string line = "trainrun: rank " + rank + " on " + host;
  if (!binding) {
    std::vector<int> all;
    for (const auto& cpu : topology.cpus) all.push_back(cpu.id);
    return line + " not bound (cpus " + format_cpu_list(all) + ")\n";
  }
  line += " bound to " + binding->unit + " (cpus " + format_cpu_list(binding->cpus) + ")";
  if (binding->shared) {
    line += binding->unit.rfind("hwthread", 0) == 0 ? ", shared: more ranks on this host than hardware threads"
                                                    : ", shared: more ranks on this host than cores";
  }
  return line + "\n";
}

}  // namespace trainrun::cli
