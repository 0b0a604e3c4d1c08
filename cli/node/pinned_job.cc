#include "cli/node/pinned_job.h"

#include "contract/environment.h"

namespace trainrun::cli::node {
namespace {

std::string_view name_of(std::string_view entry) { return entry.substr(0, entry.find('=')); }

std::string value_of(const std::vector<std::string>& env, std::string_view name) {
  for (const std::string& entry : env) {
    if (name_of(entry) == name) return entry.substr(entry.find('=') + 1);
  }
  return "";
}

}  // namespace

bool node0_may_set(std::string_view name) {
  namespace p = contract;
  if (name.rfind("TRAINRUN_", 0) == 0 || name.rfind("HOROVOD_", 0) == 0) return true;
  for (const char* set : {p::kEnvTorchRank, p::kEnvTorchWorldSize, p::kEnvTorchLocalRank, p::kEnvTorchLocalWorldSize,
                          p::kEnvTorchMasterAddr, p::kEnvTorchMasterPort, p::kEnvTorchGroupRank,
                          p::kEnvTorchGroupWorldSize, p::kEnvTorchRoleRank, p::kEnvTorchRoleWorldSize,
                          p::kEnvTorchRestartCount, p::kEnvTorchMaxRestarts, p::kEnvTorchRunId}) {
    if (name == set) return true;
  }
  return false;
}

JobSpec pin_job(JobSpec job, const OwnJob& own) {
  job.cwd = own.cwd;
  for (RankSpec& rank : job.ranks) {
    rank.argv = own.argv;
    std::vector<std::string> env;
    for (const auto& [name, value] : own.env) env.push_back(name + "=" + value);
    for (const std::string& entry : rank.env) {
      const std::string_view name = name_of(entry);
      if (node0_may_set(name) && name != contract::kEnvSecret) env.push_back(entry);
    }
    if (own.secret) {
      const std::string job_id = value_of(rank.env, contract::kEnvJobId);
      env.push_back(std::string(contract::kEnvSecret) + "=" + rendezvous::to_hex(ranks_secret(*own.secret, job_id)));
    } else {
      env.push_back(std::string(contract::kEnvSecret) + "=" + value_of(rank.env, contract::kEnvSecret));
    }
    rank.env = std::move(env);
  }
  return job;
}

}  // namespace trainrun::cli::node
