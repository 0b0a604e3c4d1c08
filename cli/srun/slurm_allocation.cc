#include "cli/srun/slurm_allocation.h"

#include <charconv>

#include "cli/plan/printable.h"
#include "contract/world.h"
#include "trainrun/error.h"

namespace trainrun::cli {
namespace {

bool is_separator(char c) { return c == ',' || c == ' ' || c == '\t' || c == '\n'; }

// One bracket's body, "1-3,5,08-10": the numbers as text, zero padding kept
// as Slurm does (the width of the lower bound when it starts with 0).
bool expand_ranges(std::string_view body, std::vector<std::string>& out, std::string& why) {
  std::size_t pos = 0;
  while (pos <= body.size()) {
    std::size_t end = body.find(',', pos);
    if (end == std::string_view::npos) end = body.size();
    const std::string_view range = body.substr(pos, end - pos);
    const std::size_t dash = range.find('-');
    const std::string_view low = range.substr(0, dash);
    const std::string_view high = dash == std::string_view::npos ? low : range.substr(dash + 1);
    unsigned long first = 0, last = 0;
    const auto number = [](std::string_view text, unsigned long& value) {
      const auto r = std::from_chars(text.data(), text.data() + text.size(), value);
      return !text.empty() && text.size() <= 9 && r.ec == std::errc() && r.ptr == text.data() + text.size();
    };
    if (!number(low, first) || !number(high, last)) {
      why = quoted(range) + " is not a number or a range like 1-4";
      return false;
    }
    if (last < first) {
      why = quoted(range) + " counts down";
      return false;
    }
    if (last - first >= kMaxSlurmHosts || out.size() + (last - first) >= kMaxSlurmHosts) {
      why = "more than " + std::to_string(kMaxSlurmHosts) + " hosts";
      return false;
    }
    const std::size_t width = low.size() > 1 && low[0] == '0' ? low.size() : 0;
    for (unsigned long n = first; n <= last; ++n) {
      std::string text = std::to_string(n);
      if (text.size() < width) text.insert(0, width - text.size(), '0');
      out.push_back(std::move(text));
    }
    pos = end + 1;
  }
  return true;
}

// One item, "r[1-2]-n[01-02]x": every combination, the leftmost bracket
// varying slowest (Slurm's order).
bool expand_item(std::string_view item, std::vector<std::string>& hosts, std::string& why) {
  std::vector<std::string> partial = {""};
  std::size_t pos = 0;
  while (pos < item.size()) {
    const std::size_t open = item.find('[', pos);
    const std::string_view literal = item.substr(pos, open == std::string_view::npos ? item.npos : open - pos);
    if (literal.find(']') != std::string_view::npos) {
      why = quoted(item) + " has a ']' without '['";
      return false;
    }
    for (std::string& p : partial) p += literal;
    if (open == std::string_view::npos) break;
    const std::size_t close = item.find(']', open);
    if (close == std::string_view::npos) {
      why = quoted(item) + " has a '[' without ']'";
      return false;
    }
    std::vector<std::string> numbers;
    if (!expand_ranges(item.substr(open + 1, close - open - 1), numbers, why)) {
      why = "in " + quoted(item) + ": " + why;
      return false;
    }
    if (partial.size() * numbers.size() + hosts.size() > kMaxSlurmHosts) {
      why = "more than " + std::to_string(kMaxSlurmHosts) + " hosts";
      return false;
    }
    std::vector<std::string> next;
    for (const std::string& p : partial) {
      for (const std::string& n : numbers) next.push_back(p + n);
    }
    partial = std::move(next);
    pos = close + 1;
  }
  hosts.insert(hosts.end(), partial.begin(), partial.end());
  return true;
}

}  // namespace

SlurmHostList expand_slurm_host_list(std::string_view text) {
  SlurmHostList result;
  std::size_t pos = 0;
  while (pos < text.size()) {
    if (is_separator(text[pos])) {
      ++pos;
      continue;
    }
    // An item ends at a separator outside brackets.
    std::size_t end = pos;
    int depth = 0;
    while (end < text.size() && (depth > 0 || !is_separator(text[end]))) {
      depth += text[end] == '[' ? 1 : text[end] == ']' ? -1 : 0;
      ++end;
    }
    if (!expand_item(text.substr(pos, end - pos), result.hosts, result.error)) {
      result.hosts.clear();
      return result;
    }
    pos = end;
  }
  if (result.hosts.empty()) result.error = "no host";
  return result;
}

int SlurmAllocation::slots() const {
  int total = 0;
  for (const HostSlots& node : nodes) total += node.slots;
  return total;
}

std::string SlurmAllocation::host_option() const {
  std::string out;
  for (const HostSlots& node : nodes) out += (out.empty() ? "" : ",") + node.host + ":" + std::to_string(node.slots);
  return out;
}

std::string SlurmAllocation::description() const { return "Slurm job " + job_id + " (" + host_option() + ")"; }

SlurmAllocationResult slurm_allocation_from_env(const SlurmGetEnv& getenv) {
  SlurmAllocationResult result;
  const char* job_id = getenv("SLURM_JOB_ID");
  if (!job_id) job_id = getenv("SLURM_JOBID");
  if (!job_id || !*job_id) return result;
  // Read from the first variable that is set; errors name it.
  const auto first_set = [&](std::initializer_list<const char*> names) -> std::pair<const char*, const char*> {
    for (const char* name : names) {
      if (const char* value = getenv(name)) return {name, value};
    }
    return {*names.begin(), nullptr};
  };
  const auto [list_name, list] = first_set({"SLURM_JOB_NODELIST", "SLURM_NODELIST"});
  const auto [count_name, counts] = first_set({"SLURM_TASKS_PER_NODE", "SLURM_JOB_CPUS_PER_NODE"});
  const std::string job = std::string("SLURM_JOB_ID=") + job_id;
  if (!list || !counts) {
    result.error =
        job + " is set but " + (list ? count_name : list_name) + " is not: not a Slurm allocation trainrun can read";
    return result;
  }
  const SlurmHostList hosts = expand_slurm_host_list(list);
  if (!hosts.error.empty()) {
    result.error = std::string(list_name) + "=" + quoted(list) + ": " + hosts.error;
    return result;
  }
  // One count per node of the list, or the error naming the variable.
  const std::string list_says = std::string(list_name) + "=" + quoted(list);
  const auto per_node = [&](const char* name, const char* text, std::vector<int>& out) {
    try {
      out = detail::slurm_tasks_per_node(text, name);
    } catch (const Error& e) {
      result.error = e.what();
      return false;
    }
    if (out.size() == hosts.hosts.size()) return true;
    result.error = std::string(name) + "=" + quoted(text) + " counts " + std::to_string(out.size()) + " node(s) but " +
                   list_says + " lists " + std::to_string(hosts.hosts.size());
    return false;
  };
  std::vector<int> slots, cpus;
  if (!per_node(count_name, counts, slots)) return result;
  const char* cpus_text = getenv("SLURM_JOB_CPUS_PER_NODE");
  if (cpus_text && !per_node("SLURM_JOB_CPUS_PER_NODE", cpus_text, cpus)) return result;
  SlurmAllocation allocation;
  allocation.job_id = job_id;
  for (std::size_t i = 0; i < slots.size(); ++i) {
    if (slots[i] <= 0) continue;
    allocation.nodes.push_back({hosts.hosts[i], slots[i], ""});
    if (!cpus.empty()) allocation.cpus.push_back(cpus[i]);
  }
  if (allocation.nodes.empty()) {
    result.error = std::string(count_name) + "=" + quoted(counts) + " gives no node a task";
    return result;
  }
  result.allocation = std::move(allocation);
  return result;
}

}  // namespace trainrun::cli
