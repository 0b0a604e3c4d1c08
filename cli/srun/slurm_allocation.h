// A Slurm allocation as trainrun sees it: the job id and its nodes with their
// task slots and CPUs, read from the variables salloc, sbatch and srun set
// (SLURM_JOB_ID, SLURM_JOB_NODELIST, SLURM_TASKS_PER_NODE,
// SLURM_JOB_CPUS_PER_NODE). Pure: the
// environment comes in through a lookup function, the compressed lists are
// expanded here (no `scontrol show hostnames`), and every error names the
// variable and quotes its value.
//   host list:       "n[1-3,5],m7" = n1 n2 n3 n5 m7; "r[1-2]-n[01-02]" =
//                    r1-n01 r1-n02 r2-n01 r2-n02 (zero padding as written);
//                    items separated by ',' (or blanks) outside brackets
//   tasks per node:  "2(x3),1" = 2 2 2 1 (contract/world.h parses it; so
//                    are the CPUs per node)
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/plan/rank_plan.h"

namespace trainrun::cli {

// An expansion never yields more hosts than this (a typo like n[1-99999999]
// must not eat the memory).
inline constexpr std::size_t kMaxSlurmHosts = 1u << 16;

struct SlurmHostList {
  std::vector<std::string> hosts;
  std::string error;  // empty on success
};
SlurmHostList expand_slurm_host_list(std::string_view text);

struct SlurmAllocation {
  std::string job_id;
  std::vector<HostSlots> nodes;  // in Slurm's order; slots = tasks on that node
  // The CPUs the job has on each node, parallel to `nodes`
  // (SLURM_JOB_CPUS_PER_NODE); empty when Slurm did not say.
  std::vector<int> cpus;
  int slots() const;
  // "vm:4,n2:2": the allocation in -H's grammar.
  std::string host_option() const;
  // "Slurm job 12 (n1:2,n2:2)": how messages name it.
  std::string description() const;
};

struct SlurmAllocationResult {
  std::optional<SlurmAllocation> allocation;  // nullopt: not inside an allocation, or error
  std::string error;                          // set when the variables are there but wrong
};

using SlurmGetEnv = std::function<const char*(const char*)>;
SlurmAllocationResult slurm_allocation_from_env(const SlurmGetEnv& getenv);

}  // namespace trainrun::cli
