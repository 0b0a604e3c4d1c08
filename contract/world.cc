#include "contract/world.h"

#include <unistd.h>

#include <charconv>
#include <optional>
#include <sstream>
#include <tuple>
#include <string_view>

#include "contract/environment.h"
#include "contract/auth_scheme.h"
#include "trainrun/error.h"

namespace trainrun::detail {
namespace {

namespace p = contract;

[[noreturn]] void bad(const char* name, std::string_view value, const std::string& why) {
  throw Error(Error::Code::InvalidArgument, std::string(name) + "='" + std::string(value) + "' " + why);
}

// The variable's value parsed whole as a T in [min, max]; nullopt when unset.
template <typename T>
std::optional<T> read_number(const EnvLookup& env, const char* name, T min, T max, const char* kind) {
  const char* text = env(name);
  if (!text) return std::nullopt;
  const std::string_view value(text);
  T number{};
  const auto r = std::from_chars(value.data(), value.data() + value.size(), number);
  if (value.empty() || r.ec != std::errc() || r.ptr != value.data() + value.size()) {
    bad(name, value, std::string("is not ") + kind);
  }
  if (!(number >= min && number <= max)) {
    auto text_of = [](T v) {
      std::ostringstream out;
      out << v;
      return out.str();
    };
    bad(name, value, "is out of range [" + text_of(min) + ", " + text_of(max) + "]");
  }
  return number;
}

int require_int(const EnvLookup& env, const char* name, long long min, long long max) {
  auto v = env_int(env, name, min, max);
  if (!v) throw Error(Error::Code::InvalidArgument, std::string(name) + " is not set");
  return static_cast<int>(*v);
}

std::string read_string(const EnvLookup& env, const char* name) {
  const char* text = env(name);
  return text ? std::string(text) : std::string();
}

std::string host_name() {
  char buffer[256] = {};
  if (::gethostname(buffer, sizeof buffer - 1) != 0) return "localhost";
  return buffer;
}

void check_rank(const char* rank_name, int rank, const char* size_name, int size) {
  if (rank >= size) {
    throw Error(Error::Code::InvalidArgument, std::string(rank_name) + "=" + std::to_string(rank) + " is not below " +
                                                  size_name + "=" + std::to_string(size));
  }
}

constexpr long long kMaxRanks = 1 << 24;

// Only under TRAINRUN_ELASTIC=1: a worker without its id could not tell
// which slot of a generation is its own.
void read_elastic(const EnvLookup& env, World& w) {
  w.elastic = env_int(env, p::kEnvElastic, 0, 1).value_or(0) == 1;
  if (!w.elastic) return;
  const auto worker = env_int(env, p::kEnvWorkerId, 0, kMaxRanks);
  if (!worker) {
    throw Error(Error::Code::InvalidArgument,
                std::string(p::kEnvWorkerId) + " is not set but " + p::kEnvElastic + "=1: start the job with trainrun");
  }
  w.worker_id = static_cast<int>(*worker);
  if (auto s = env_int(env, p::kEnvElasticTimeout, 1, 30 * 86400)) w.elastic_timeout = std::chrono::seconds(*s);
}

void read_trainrun(const EnvLookup& env, World& w) {
  w.source = World::Source::Trainrun;
  w.size = require_int(env, p::kEnvSize, 1, kMaxRanks);
  w.rank = require_int(env, p::kEnvRank, 0, kMaxRanks);
  check_rank(p::kEnvRank, w.rank, p::kEnvSize, w.size);
  w.local_size = static_cast<int>(env_int(env, p::kEnvLocalSize, 1, kMaxRanks).value_or(w.size));
  w.local_rank = static_cast<int>(env_int(env, p::kEnvLocalRank, 0, kMaxRanks).value_or(w.rank));
  check_rank(p::kEnvLocalRank, w.local_rank, p::kEnvLocalSize, w.local_size);
  w.cross_size = static_cast<int>(env_int(env, p::kEnvCrossSize, 1, kMaxRanks).value_or(1));
  w.cross_rank = static_cast<int>(env_int(env, p::kEnvCrossRank, 0, kMaxRanks).value_or(0));
  check_rank(p::kEnvCrossRank, w.cross_rank, p::kEnvCrossSize, w.cross_size);
  const std::string host = read_string(env, p::kEnvHostname);
  if (!host.empty()) w.hostname = host;
  read_elastic(env, w);

  w.rendezvous_addr = read_string(env, p::kEnvRendezvousAddr);
  if (w.rendezvous_addr.empty()) {
    if (w.size > 1 && w.backend != "mpi") {
      throw Error(Error::Code::InvalidArgument, std::string(p::kEnvRendezvousAddr) + " is not set but " + p::kEnvSize +
                                                    "=" + std::to_string(w.size) + ": start the job with trainrun");
    }
    return;
  }
  w.rendezvous_port = static_cast<std::uint16_t>(require_int(env, p::kEnvRendezvousPort, 1, 65535));
  w.job_id = read_string(env, p::kEnvJobId);
  w.secret_hex = read_string(env, p::kEnvSecret);
  if (w.secret_hex.size() != 2 * p::kSecretBytes) {
    throw Error(Error::Code::InvalidArgument, std::string(p::kEnvSecret) + " is missing or not " +
                                                  std::to_string(2 * p::kSecretBytes) + " hex digits");
  }
}

void read_open_mpi(const EnvLookup& env, World& w) {
  w.source = World::Source::OpenMpi;
  w.size = require_int(env, p::kEnvOmpiSize, 1, kMaxRanks);
  w.rank = require_int(env, p::kEnvOmpiRank, 0, kMaxRanks);
  check_rank(p::kEnvOmpiRank, w.rank, p::kEnvOmpiSize, w.size);
  w.local_size = static_cast<int>(env_int(env, p::kEnvOmpiLocalSize, 1, kMaxRanks).value_or(1));
  w.local_rank = static_cast<int>(env_int(env, p::kEnvOmpiLocalRank, 0, kMaxRanks).value_or(0));
  check_rank(p::kEnvOmpiLocalRank, w.local_rank, p::kEnvOmpiLocalSize, w.local_size);
  // Open MPI does not export the host index; assume the usual by-slot
  // layout here. The MPI backend computes the exact values from a split.
  w.cross_size = (w.size + w.local_size - 1) / w.local_size;
  w.cross_rank = w.rank / w.local_size;
}

// Slurm starts a task with PMI only when asked (srun --mpi=pmix, or
// MpiDefault): these are the variables that say so. Read only to refuse a
// multi-task step without PMI, where MPI_Init would make every task a
// world of one (or abort with Open MPI's banner).
constexpr const char* kSlurmPmiVariables[] = {"PMIX_RANK", "PMIX_NAMESPACE", "PMI_RANK", "PMI_FD"};
constexpr const char* kEnvSlurmMpiType = "SLURM_MPI_TYPE";

void require_slurm_pmi(const EnvLookup& env, const World& w) {
  if (w.size == 1) return;
  for (const char* name : kSlurmPmiVariables) {
    if (env(name)) return;
  }
  const std::string mpi_type = read_string(env, kEnvSlurmMpiType);
  if (!mpi_type.empty() && mpi_type != "none") return;
  throw Error(Error::Code::InvalidArgument,
              "Slurm started task " + std::to_string(w.rank) + " of " + std::to_string(w.size) + " without PMI (" +
                  kEnvSlurmMpiType + "=" + (mpi_type.empty() ? "unset" : mpi_type) +
                  "), so the tasks cannot find each other: use 'srun --mpi=pmix' or 'trainrun --launcher srun'");
}

void read_slurm(const EnvLookup& env, World& w) {
  w.source = World::Source::Slurm;
  w.size = require_int(env, p::kEnvSlurmNTasks, 1, kMaxRanks);
  w.rank = require_int(env, p::kEnvSlurmProcId, 0, kMaxRanks);
  check_rank(p::kEnvSlurmProcId, w.rank, p::kEnvSlurmNTasks, w.size);
  require_slurm_pmi(env, w);
  w.local_rank = static_cast<int>(env_int(env, p::kEnvSlurmLocalId, 0, kMaxRanks).value_or(0));
  const int node = static_cast<int>(env_int(env, p::kEnvSlurmNodeId, 0, kMaxRanks).value_or(0));
  const std::string tasks = read_string(env, p::kEnvSlurmTasksPerNode);
  std::vector<int> per_node = tasks.empty() ? std::vector<int>{w.size} : slurm_tasks_per_node(tasks);
  if (node >= static_cast<int>(per_node.size())) {
    bad(p::kEnvSlurmNodeId, std::to_string(node), "has no entry in " + std::string(p::kEnvSlurmTasksPerNode));
  }
  w.local_size = per_node[node];
  check_rank(p::kEnvSlurmLocalId, w.local_rank, "the tasks on this node", w.local_size);
  std::tie(w.cross_rank, w.cross_size) = cross_rank_and_size(per_node, node, w.local_rank);
}

}  // namespace

const char* to_string(World::Source source) {
  switch (source) {
    case World::Source::Trainrun: return "trainrun";
    case World::Source::OpenMpi: return "Open MPI";
    case World::Source::Slurm: return "Slurm";
    case World::Source::Single: return "single process";
    case World::Source::Store: return "a torch.distributed store";
  }
  return "?";
}

std::pair<int, int> cross_rank_and_size(const std::vector<int>& slots_per_host, int host, int local_rank) {
  int cross_rank = 0, cross_size = 0;
  for (int h = 0; h < static_cast<int>(slots_per_host.size()); ++h) {
    if (slots_per_host[h] > local_rank) {
      if (h < host) ++cross_rank;
      ++cross_size;
    }
  }
  return {cross_rank, cross_size};
}

std::vector<int> slurm_tasks_per_node(std::string_view text, const char* name) {
  std::vector<int> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find(',', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view item = text.substr(pos, end - pos);
    int tasks = 0, repeat = 1;
    const auto r = std::from_chars(item.data(), item.data() + item.size(), tasks);
    if (r.ec != std::errc() || tasks < 0) bad(name, text, "is malformed");
    const std::string_view rest(r.ptr, item.data() + item.size() - r.ptr);
    if (!rest.empty()) {
      if (rest.size() < 4 || rest.substr(0, 2) != "(x" || rest.back() != ')') {
        bad(name, text, "is malformed");
      }
      const auto rr = std::from_chars(rest.data() + 2, rest.data() + rest.size() - 1, repeat);
      if (rr.ec != std::errc() || repeat < 1 || repeat > 1 << 20) bad(name, text, "is malformed");
    }
    out.insert(out.end(), repeat, tasks);
    pos = end + 1;
  }
  return out;
}

std::optional<long long> env_int(const EnvLookup& env, const char* name, long long min, long long max) {
  return read_number<long long>(env, name, min, max, "an integer");
}

std::optional<double> env_number(const EnvLookup& env, const char* name, double min, double max) {
  return read_number<double>(env, name, min, max, "a number");
}

std::string canonical_backend(const std::string& name) { return name == "gloo" ? "tcp" : name; }

World world_settings_from_env(const EnvLookup& env) {
  World w;
  w.hostname = host_name();
  w.backend = canonical_backend(read_string(env, p::kEnvBackend));
  w.iface = read_string(env, p::kEnvIface);
  w.network = read_string(env, p::kEnvNetwork);
  if (auto s = env_int(env, p::kEnvStartTimeout, 1, 86400)) w.start_timeout = std::chrono::seconds(*s);
  if (auto s = env_int(env, p::kEnvCollectiveTimeout, 1, 30 * 86400)) {
    w.collective_timeout = std::chrono::seconds(*s);
    w.nccl_timeout = w.collective_timeout;
  }
  if (auto s = env_number(env, p::kEnvStallWarning, 0, 30 * 86400)) {
    w.wait_warning = std::chrono::milliseconds(static_cast<long long>(*s * 1000));
  }
  if (auto s = env_int(env, p::kEnvNcclTimeout, 1, 30 * 86400)) w.nccl_timeout = std::chrono::seconds(*s);
  w.shm = env_int(env, p::kEnvShm, 0, 1).value_or(1) == 1;
  w.switch_points = read_string(env, p::kEnvSwitchPoints);
  w.check_calls = env_int(env, p::kEnvCheckCalls, 0, 1).value_or(0) == 1;
  w.cuda_device = static_cast<int>(env_int(env, p::kEnvCudaDevice, 0, 1023).value_or(-1));
  w.cuda_visible_devices_set = env(p::kEnvCudaVisibleDevices) != nullptr;
  return w;
}

World world_from_env(const EnvLookup& env) {
  World w = world_settings_from_env(env);
  if (env(p::kEnvRank)) {
    read_trainrun(env, w);
  } else if (env(p::kEnvOmpiRank)) {
    read_open_mpi(env, w);
  } else if (env(p::kEnvSlurmProcId)) {
    read_slurm(env, w);
  }
  return w;
}

}  // namespace trainrun::detail
