#include "cli/plan/rank_env.h"

#include <unordered_map>

#include "contract/environment.h"

namespace trainrun::cli {

EnvList rank_environment(const RankSlot& slot, const JobEnv& job) {
  namespace p = contract;
  const auto n = [](int v) { return std::to_string(v); };
  EnvList env = job.extra;
  auto add = [&](const char* name, std::string value) { env.emplace_back(name, std::move(value)); };
  add(p::kEnvRank, n(slot.rank));
  add(p::kEnvSize, n(job.size));
  add(p::kEnvLocalRank, n(slot.local_rank));
  add(p::kEnvLocalSize, n(slot.local_size));
  add(p::kEnvCrossRank, n(slot.cross_rank));
  add(p::kEnvCrossSize, n(slot.cross_size));
  add(p::kEnvHostname, slot.host);
  if (!job.backend.empty()) add(p::kEnvBackend, job.backend);
  add(p::kEnvRendezvousAddr, job.rendezvous_addr);
  add(p::kEnvRendezvousPort, n(job.rendezvous_port));
  add(p::kEnvJobId, job.job_id);
  add(p::kEnvSecret, job.secret_hex);
  // The ranks wait a little longer than the launcher, so that a rank that
  // never arrives is reported by the launcher, naming it and its host,
  // rather than by its peers' rendezvous timeouts.
  add(p::kEnvStartTimeout, n(job.start_timeout_s + kRankStartMarginS));
  add(p::kEnvHorovodRank, n(slot.rank));
  add(p::kEnvHorovodSize, n(job.size));
  add(p::kEnvHorovodLocalRank, n(slot.local_rank));
  add(p::kEnvHorovodLocalSize, n(slot.local_size));
  add(p::kEnvHorovodCrossRank, n(slot.cross_rank));
  add(p::kEnvHorovodCrossSize, n(slot.cross_size));
  add(p::kEnvTorchRank, n(slot.rank));
  add(p::kEnvTorchWorldSize, n(job.size));
  add(p::kEnvTorchLocalRank, n(slot.local_rank));
  add(p::kEnvTorchLocalWorldSize, n(slot.local_size));
  add(p::kEnvTorchMasterAddr, job.master_addr);
  add(p::kEnvTorchMasterPort, n(job.master_port));
  add(p::kEnvTorchGroupRank, n(slot.cross_rank));
  add(p::kEnvTorchGroupWorldSize, n(slot.cross_size));
  add(p::kEnvTorchRoleRank, n(slot.rank));
  add(p::kEnvTorchRoleWorldSize, n(job.size));
  add(p::kEnvTorchRestartCount, n(job.restart_count));
  add(p::kEnvTorchMaxRestarts, n(job.max_restarts));
  add(p::kEnvTorchRunId, job.job_id);
  return env;
}

bool is_env_name(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name) {
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

std::vector<std::string> merge_environment(const std::vector<std::string>& base, const EnvList& overrides) {
  std::unordered_map<std::string, std::size_t> index;
  std::vector<std::string> out;
  out.reserve(base.size() + overrides.size());
  for (const auto& entry : base) {
    const std::string name = entry.substr(0, entry.find('='));
    auto [it, fresh] = index.emplace(name, out.size());
    if (fresh) out.push_back(entry);
    else out[it->second] = entry;
  }
  for (const auto& [name, value] : overrides) {
    auto [it, fresh] = index.emplace(name, out.size());
    if (fresh) out.push_back(name + "=" + value);
    else out[it->second] = name + "=" + value;
  }
  return out;
}

}  // namespace trainrun::cli
