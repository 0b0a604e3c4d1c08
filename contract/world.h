// detail::World: who this process is in the job and how to reach its peers,
// read once from the environment (docs/design.md §3): TRAINRUN_* when trainrun
// started us, else Open MPI's OMPI_COMM_WORLD_*, else Slurm's SLURM_*, else
// a single process; or from a framework's store (Source::Store: torchrun,
// mp.spawn, lib/store_world.h). Plain value type; world_from_env is pure
// given `env`.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trainrun::detail {

struct World {
  enum class Source { Trainrun, OpenMpi, Slurm, Single, Store };

  int rank = 0;
  int size = 1;
  int local_rank = 0;
  int local_size = 1;
  int cross_rank = 0;
  int cross_size = 1;
  std::string hostname;
  Source source = Source::Single;
  std::string backend;  // TRAINRUN_BACKEND; empty: the registry's default

  // Rendezvous; empty address when the job has none (MPI, single process).
  std::string rendezvous_addr;
  std::uint16_t rendezvous_port = 0;
  std::string job_id;
  std::string secret_hex;
  // Source::Store: the store's host (torch's MASTER_ADDR), whose route
  // picks this host's address on the job's network as the rendezvous's does.
  std::string store_addr;
  std::string iface;    // TRAINRUN_IFACE
  std::string network;  // TRAINRUN_NETWORK (CIDR)
  std::chrono::milliseconds start_timeout{30'000};
  std::chrono::milliseconds collective_timeout{1'800'000};
  // A core call that waits this long for a peer says so, once per interval
  // (TRAINRUN_STALL_WARNING, the engine's stall warning too); 0: never.
  std::chrono::milliseconds wait_warning{60'000};
  // TRAINRUN_SHM: whether ranks on one host may use shared memory (tcp).
  bool shm = true;
  // TRAINRUN_SWITCH_POINTS: overrides of the cross-host switch points (contract/switch_points.h).
  std::string switch_points;
  // TRAINRUN_CHECK_CALLS: gather every core call's descriptor first (backends/call_descriptor.h).
  bool check_calls = false;

  // CUDA buffers (backends/nccl): TRAINRUN_CUDA_DEVICE (-1 when unset),
  // whether CUDA_VISIBLE_DEVICES is set, and how long an NCCL call may take.
  int cuda_device = -1;
  bool cuda_visible_devices_set = false;
  std::chrono::milliseconds nccl_timeout{600'000};

  // Elastic jobs (contract/elastic_protocol.h): TRAINRUN_ELASTIC=1, this
  // process's stable TRAINRUN_WORKER_ID, how long it waits for a generation
  // that includes it (TRAINRUN_ELASTIC_TIMEOUT), and the generation it
  // joined (init sets it; rank..cross_size then come from that generation).
  bool elastic = false;
  int worker_id = -1;
  std::chrono::milliseconds elastic_timeout{600'000};
  int generation = 0;

  // A process set's world (Communicator::subset): the job rank of each of
  // its ranks, for messages and for the launcher's per-rank records; empty
  // for the whole job.
  std::vector<int> members;
  std::string set;  // a process set's name in rendezvous keys (BackendContext::set)
  // A process set's id in Horovod's Python API (hvd.ProcessSet.process_set_id),
  // for messages only; -1 when none was given (Communicator::subset in C++).
  int set_id = -1;

  bool has_rendezvous() const { return !rendezvous_addr.empty(); }
  // The job rank of rank `r` of this world.
  int job_rank(int r) const { return members.empty() ? r : members[static_cast<std::size_t>(r)]; }
};

const char* to_string(World::Source source);

using EnvLookup = std::function<const char*(const char*)>;

// Throws Error(InvalidArgument) naming the variable and its value when a
// variable is present but malformed or inconsistent (rank >= size, ...).
World world_from_env(const EnvLookup& env);
// The settings only (TRAINRUN_BACKEND, _IFACE, _NETWORK, the timeouts, _SHM,
// ...): a single process's world, for a caller that learns the rest
// elsewhere (lib/store_world.h). Throws as world_from_env does.
World world_settings_from_env(const EnvLookup& env);

// A backend's name as --backend and TRAINRUN_BACKEND accept it: "gloo",
// the tcp backend's former name (and Horovod's word for a CPU job), is
// "tcp"; every other name is itself.
std::string canonical_backend(const std::string& name);

// An integer (or decimal: env_number) variable; nullopt when unset. Throws
// Error(InvalidArgument) naming the variable and its value when it is
// malformed or outside [min, max].
std::optional<long long> env_int(const EnvLookup& env, const char* name, long long min, long long max);
std::optional<double> env_number(const EnvLookup& env, const char* name, double min, double max);

// Horovod's cross rank/size for a host layout: `slots_per_host[h]` ranks on
// host h; returns {index of `host` among hosts that have a slot at
// `local_rank`, number of such hosts}.
std::pair<int, int> cross_rank_and_size(const std::vector<int>& slots_per_host, int host, int local_rank);

// Slurm's per-node counts (SLURM_TASKS_PER_NODE, SLURM_JOB_CPUS_PER_NODE):
// "2(x3),1" = {2, 2, 2, 1}. Throws Error(InvalidArgument) naming `name` and
// quoting `text` when it is malformed.
std::vector<int> slurm_tasks_per_node(std::string_view text, const char* name = "SLURM_TASKS_PER_NODE");

}  // namespace trainrun::detail
