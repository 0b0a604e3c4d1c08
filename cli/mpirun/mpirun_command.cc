#include "cli/mpirun/mpirun_command.h"

#include <algorithm>
#include <cctype>

#include "cli/plan/shell_words.h"
#include "trainrun/error.h"

namespace trainrun::cli {
namespace {

[[noreturn]] void invalid(const std::string& message) { throw Error(Error::Code::InvalidArgument, message); }

std::string host_list(const std::vector<HostSlots>& hosts) {
  std::string out;
  for (const HostSlots& h : hosts) {
    if (h.host.empty() || h.slots < 1) {
      invalid("host '" + h.host + ":" + std::to_string(h.slots) + "' needs a name and at least one slot");
    }
    out += (out.empty() ? "" : ",") + h.host + ":" + std::to_string(h.slots);
  }
  return out;
}

}  // namespace

std::vector<std::string> mpirun_command(const MpirunJob& job) {
  if (job.command.empty()) invalid("no program given");
  std::vector<std::string> argv = {job.mpirun, "-np", std::to_string(job.np), "-H",
                                   job.hosts.empty() ? "localhost:" + std::to_string(job.np) : host_list(job.hosts),
                                   // trainrun's placement options, by default: ranks fill hosts
                                   // in order and are not pinned (frameworks run their own threads).
                                   "--bind-to", job.bind_to, "--map-by", job.map_by};
  if (job.report_bindings) argv.push_back("--report-bindings");
  if (!job.wdir.empty()) argv.insert(argv.end(), {"--wdir", job.wdir});
  if (job.timestamp_output) argv.push_back("--timestamp-output");
  // -H localhost:np tells Open MPI there are np slots, so it would busy-poll
  // even with more ranks than CPUs: np=4 conformance on 2 CPUs took 3x as long.
  if (job.hosts.empty() && job.local_cpus > 0 && job.np > job.local_cpus) {
    argv.insert(argv.end(), {"--mca", "mpi_yield_when_idle", "1"});
  }
  if (job.tag_output) argv.push_back("--tag-output");
  if (job.as_root) argv.push_back("--allow-run-as-root");
  auto set_by_job = [&](const std::string& name) {
    return std::any_of(job.job_env.begin(), job.job_env.end(), [&](const auto& e) { return e.first == name; });
  };
  for (const auto& [name, value] : job.job_env) {
    if (!is_env_name(name)) invalid("not an environment variable name: '" + name + "'");
    argv.insert(argv.end(), {"-x", name + "=" + value});
  }
  for (const std::string& name : job.forward_env) {
    if (!is_env_name(name)) invalid("not an environment variable name: '" + name + "'");
    if (!set_by_job(name)) argv.insert(argv.end(), {"-x", name});
  }
  for (std::size_t i = 0; i + 1 < job.mca.size(); i += 2)
    argv.insert(argv.end(), {"--mca", job.mca[i], job.mca[i + 1]});
  std::vector<std::string> extra;
  try {
    extra = split_shell_words(job.mpi_args);
  } catch (const Error& e) {
    invalid(std::string("--mpi-args: ") + e.what());
  }
  for (std::string& word : extra) argv.push_back(std::move(word));
  argv.insert(argv.end(), job.command.begin(), job.command.end());
  return argv;
}

}  // namespace trainrun::cli
