#include "cli/srun/step_request.h"

#include <algorithm>
#include <charconv>
#include <string_view>

#include "cli/plan/printable.h"

namespace trainrun::cli {
namespace {

// No count Slurm writes comes near this; a typo must not overflow.
constexpr long long kMaxCount = 1 << 20;

// The GPUs of one type ("" for any type).
struct GpuCount {
  std::string type;
  long long count = 0;
};

// What a node's GPUs are: counts, the job's other GRES, or why not.
struct NodeGres {
  std::vector<GpuCount> gpus;
  std::vector<std::string> others;  // SLURM_GRES's entries that are not gpu
  std::string error;
};

// The variables srun reads as GPU options of its own (srun(1), INPUT
// ENVIRONMENT VARIABLES); the step's --gres replaces them.
constexpr const char* kGpuOptionVariables[] = {"SLURM_GPUS", "SLURM_GPUS_PER_NODE", "SLURM_GPUS_PER_SOCKET",
                                               "SLURM_GPUS_PER_TASK", "SLURM_NTASKS_PER_GPU"};

bool count_of(std::string_view text, long long& value) {
  const auto r = std::from_chars(text.data(), text.data() + text.size(), value);
  return !text.empty() && r.ec == std::errc() && r.ptr == text.data() + text.size() && value >= 0 && value <= kMaxCount;
}

// The items of a comma-separated list, empty ones too.
std::vector<std::string_view> items(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find(',', pos);
    if (end == std::string_view::npos) end = text.size();
    out.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

// "[gpu:][TYPE:]N[,...]": the grammar of --gpus, --gpus-per-node and
// --gpus-per-task, which the variables repeat.
bool gpu_counts(std::string_view text, std::vector<GpuCount>& out) {
  for (std::string_view item : items(text)) {
    if (item.substr(0, 4) == "gpu:") item.remove_prefix(4);
    const std::size_t colon = item.rfind(':');
    GpuCount gpus;
    if (colon != std::string_view::npos) {
      gpus.type = std::string(item.substr(0, colon));
      item.remove_prefix(colon + 1);
      if (gpus.type.empty()) return false;
    }
    if (!count_of(item, gpus.count)) return false;
    out.push_back(std::move(gpus));
  }
  return true;
}

// SLURM_GRES, --gres's grammar "NAME[:TYPE][:N][,...]" (N defaults to 1):
// the gpu entries as counts, the others as they are.
bool gres_entries(std::string_view text, NodeGres& out) {
  for (const std::string_view item : items(text)) {
    if (item != "gpu" && item.substr(0, 4) != "gpu:") {
      if (!item.empty()) out.others.emplace_back(item);
      continue;
    }
    std::string_view rest = item.substr(item.size() > 3 ? 4 : 3);
    GpuCount gpus{"", 1};
    const std::size_t colon = rest.rfind(':');
    const std::string_view last = colon == std::string_view::npos ? rest : rest.substr(colon + 1);
    if (!rest.empty() && !count_of(last, gpus.count)) {
      if (colon != std::string_view::npos) return false;  // gpu:TYPE:junk
      gpus.type = std::string(rest);                      // gpu:TYPE
    } else if (colon != std::string_view::npos) {
      gpus.type = std::string(rest.substr(0, colon));
    }
    out.gpus.push_back(std::move(gpus));
  }
  return true;
}

// SLURM_JOB_GPUS, the job's GPU indices on this node: "0,1", "0-3".
long long index_count(std::string_view text) {
  long long count = 0;
  for (const std::string_view item : items(text)) {
    const std::size_t dash = item.find('-');
    long long first = 0, last = 0;
    if (dash != std::string_view::npos && count_of(item.substr(0, dash), first) &&
        count_of(item.substr(dash + 1), last) && last >= first) {
      count += last - first + 1;
    } else if (!item.empty()) {
      ++count;
    }
  }
  return count;
}

// The node's GPUs of the job (see the header for the order of the sources).
NodeGres node_gres(const SlurmGetEnv& getenv, long long slots, long long nodes) {
  NodeGres gres;
  const auto bad = [&](const char* name, const char* value, const std::string& why) {
    gres.gpus.clear();
    gres.error = std::string(name) + "=" + quoted(value) + " " + why;
    return gres;
  };
  const char* const kCountLike = "is not a GPU count like 2 or a100:2";
  const auto scaled = [&](long long times, long long over) {
    for (GpuCount& g : gres.gpus) g.count = (g.count * times + over - 1) / over;
  };
  if (const char* v = getenv("SLURM_GRES")) {
    NodeGres from_gres;
    if (!gres_entries(v, from_gres)) return bad("SLURM_GRES", v, "is not a list like gpu:2 or gpu:a100:2,nvme:1");
    gres.others = from_gres.others;
    gres.gpus = from_gres.gpus;  // the fifth source, unless one before it is set
  }
  std::vector<GpuCount> counts;
  long long per = 0;
  if (const char* v = getenv("SLURM_GPUS_PER_NODE")) {
    if (!gpu_counts(v, counts)) return bad("SLURM_GPUS_PER_NODE", v, kCountLike);
    gres.gpus = counts;
  } else if (const char* v = getenv("SLURM_GPUS_PER_TASK")) {
    if (!gpu_counts(v, counts)) return bad("SLURM_GPUS_PER_TASK", v, kCountLike);
    gres.gpus = counts;
    scaled(slots, 1);
  } else if (const char* v = getenv("SLURM_NTASKS_PER_GPU")) {
    if (!count_of(v, per) || per < 1) return bad("SLURM_NTASKS_PER_GPU", v, "is not a number of tasks");
    gres.gpus = {{"", slots}};
    scaled(1, per);
  } else if (const char* v = getenv("SLURM_GPUS")) {
    if (!gpu_counts(v, counts)) return bad("SLURM_GPUS", v, kCountLike);
    for (const GpuCount& g : counts) {
      if (g.count % nodes != 0) {
        return bad("SLURM_GPUS", v,
                   "(--gpus) does not say how the job's GPUs are spread over its " + std::to_string(nodes) +
                       " nodes: ask salloc/sbatch for --gpus-per-node or --gpus-per-task");
      }
    }
    gres.gpus = counts;
    scaled(1, nodes);
  } else if (!gres.gpus.empty()) {
    // SLURM_GRES's, read above.
  } else if (const char* v = getenv("SLURM_GPUS_ON_NODE")) {
    if (!count_of(v, per)) return bad("SLURM_GPUS_ON_NODE", v, "is not a number of GPUs");
    gres.gpus = {{"", per}};
  } else if (const char* v = getenv("SLURM_JOB_GPUS")) {
    gres.gpus = {{"", index_count(v)}};
  }
  return gres;
}

std::string gres_option(const NodeGres& gres) {
  std::string out;
  const auto add = [&out](const std::string& entry) { out += (out.empty() ? "" : ",") + entry; };
  for (const GpuCount& g : gres.gpus) {
    if (g.count > 0) add("gpu:" + (g.type.empty() ? "" : g.type + ":") + std::to_string(g.count));
  }
  for (const std::string& other : gres.others) add(other);
  return out.empty() ? out : "--gres=" + out;
}

}  // namespace

StepRequests step_requests(const SlurmAllocation& allocation, const SlurmGetEnv& getenv) {
  StepRequests result;
  long long per_task = 1;
  const char* per_task_text = getenv("SLURM_CPUS_PER_TASK");
  if (per_task_text && (!count_of(per_task_text, per_task) || per_task < 1)) {
    result.error = std::string("SLURM_CPUS_PER_TASK=") + quoted(per_task_text) + " is not a number of CPUs";
    return result;
  }
  result.rank_env.push_back("SLURM_CPUS_PER_TASK=" + std::to_string(per_task));
  const auto nodes = static_cast<long long>(allocation.nodes.size());
  for (std::size_t i = 0; i < allocation.nodes.size(); ++i) {
    const long long slots = allocation.nodes[i].slots;
    const long long cpus = allocation.cpus.empty() ? slots * per_task : allocation.cpus[i];
    StepRequest step;
    step.options.push_back("--cpus-per-task=" + std::to_string(cpus > 0 ? cpus : slots));
    const NodeGres gres = node_gres(getenv, slots, nodes);
    if (!gres.error.empty()) {
      result.error = gres.error;
      result.nodes.clear();
      return result;
    }
    const std::string option = gres_option(gres);
    if (!option.empty()) step.options.push_back(option);
    if (getenv("SRUN_CPUS_PER_TASK")) step.unset.emplace_back("SRUN_CPUS_PER_TASK");
    for (const char* name : kGpuOptionVariables) {
      if (!option.empty() && getenv(name)) step.unset.emplace_back(name);
    }
    for (const std::string& name : step.unset) {
      const std::string entry = name + "=" + getenv(name.c_str());
      if (std::find(result.rank_env.begin(), result.rank_env.end(), entry) == result.rank_env.end()) {
        result.rank_env.push_back(entry);
      }
    }
    result.nodes.push_back(std::move(step));
  }
  return result;
}

}  // namespace trainrun::cli
