#include "cli/plan/local_devices.h"

#include <sched.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <system_error>

#include "cli/plan/options.h"

namespace trainrun::cli {

int nvidia_device_nodes(const std::string& dev) {
  int n = 0;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dev, error)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > 6 && name.rfind("nvidia", 0) == 0 &&
        name.find_first_not_of("0123456789", 6) == std::string::npos) {
      ++n;
    }
  }
  return n;
}

int cuda_visible_count(int devices, const char* cuda_visible_devices) {
  if (!cuda_visible_devices) return devices;
  const std::string list = cuda_visible_devices;
  std::set<std::string> seen;
  for (std::size_t at = 0; at < list.size() && static_cast<int>(seen.size()) < devices;) {
    std::size_t end = list.find(',', at);
    if (end == std::string::npos) end = list.size();
    const std::string entry = list.substr(at, end - at);
    const bool uuid = entry.rfind("GPU-", 0) == 0 || entry.rfind("MIG-", 0) == 0;
    const bool index = !entry.empty() && entry.size() < 9 && entry.find_first_not_of("0123456789") == std::string::npos;
    if (!(uuid || (index && std::stoi(entry) < devices)) ||
        !seen.insert(index ? std::to_string(std::stoi(entry)) : entry).second) {
      break;
    }
    at = end + 1;
  }
  return static_cast<int>(seen.size());
}

int visible_cuda_gpus(const std::string& dev, const char* cuda_visible_devices) {
  return cuda_visible_count(nvidia_device_nodes(dev), cuda_visible_devices);
}

int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

std::string count_nproc_per_node(Options& o, int gpus, int cpus) {
  const std::string& count = o.nproc_per_node_count;
  if (count.empty()) return "";
  const std::string option = "--nproc-per-node " + count;
  if (!o.hosts.empty() || !o.hostfile.empty()) {
    return option + " counts this machine's " + (count == "cpu" ? "CPUs" : "GPUs") +
           "; other hosts' are not known before they start: give the ranks per host, --nproc-per-node N";
  }
  if (count == "gpu" && gpus == 0) {
    return option +
           ": no CUDA GPU here (no /dev/nvidiaN, or CUDA_VISIBLE_DEVICES hides them); give the ranks, "
           "--nproc-per-node N, or cpu";
  }
  o.nproc_per_node = count == "cpu" || (count == "auto" && gpus == 0) ? cpus : gpus;
  return "";
}

}  // namespace trainrun::cli
