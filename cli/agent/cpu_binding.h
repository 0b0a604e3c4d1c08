// CPU binding of ranks (launcher --bind-to, mpirun's name): the host's
// topology from /sys (each usable CPU's core, socket and NUMA node), which
// unit a rank gets by its local rank, and the --report-bindings line. The
// agent computes a rank's CPU set before fork and the child applies it
// with sched_setaffinity before exec (cli/agent/agent.cc). Reading /sys is
// the only I/O; the rest is pure. Not thread-safe (plain values).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace trainrun::cli {

struct CpuTopology {
  struct Cpu {
    int id = 0;       // logical CPU number
    int package = 0;  // socket
    int core = 0;     // core id within the package
    int node = 0;     // NUMA node
  };
  std::vector<Cpu> cpus;  // those this process may run on, by id
};

// The CPUs of this process's affinity mask, with their place in the
// topology under `sys` (/sys/devices/system); missing files count as one
// socket, one NUMA node and one core per CPU.
CpuTopology read_cpu_topology(const std::string& sys = "/sys/devices/system");

struct CpuBinding {
  std::string unit;       // "core 1", "hwthread 3", "socket 0", "NUMA node 0"
  std::vector<int> cpus;  // the CPUs the rank may run on
  bool shared = false;    // core, hwthread: more ranks on the host than those, so they are reused
};

// `local_rank`'s unit for `bind_to` ("core", "hwthread", "socket", "numa"): the
// local_rank-th unit in CPU order, round-robin when there are fewer units
// than ranks; nullopt for "none", an unknown kind or no CPUs.
std::optional<CpuBinding> choose_binding(const CpuTopology& topology, const std::string& bind_to, int local_rank);

// "0-3,8" -> {0,1,2,3,8}; empty on a malformed list.
std::vector<int> parse_cpu_list(const std::string& text);
// {0,1,2,3,8} -> "0-3,8" (the stack report's rank ranges, cli/report/stack_text.h).
std::string format_cpu_list(const std::vector<int>& cpus);

// The --report-bindings line: "trainrun: rank 1 on HOST bound to core 1
// (cpus 1)", or "... not bound (cpus 0-3)" with `binding` empty.
std::string binding_line(const std::string& rank, const std::string& host, const std::optional<CpuBinding>& binding,
                         const CpuTopology& topology);

}  // namespace trainrun::cli
