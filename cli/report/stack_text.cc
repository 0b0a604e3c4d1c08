#include "cli/report/stack_text.h"

#include <algorithm>
#include <map>
#include <sstream>

namespace trainrun::cli::report {
namespace {

bool starts_with(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }

std::string_view trim(std::string_view text) {
  const std::size_t first = text.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const std::size_t last = text.find_last_not_of(" \t\r");
  return text.substr(first, last - first + 1);
}

std::string_view next_word(std::string_view& rest) {
  rest = trim(rest);
  const std::size_t end = std::min(rest.find(' '), rest.size());
  const std::string_view word = rest.substr(0, end);
  rest.remove_prefix(end);
  return word;
}

struct Process {
  std::string name;  // the command, when the agent named it
  std::vector<std::vector<std::string>> threads;
};

std::vector<Process> parse(std::string_view text) {
  std::vector<Process> processes;
  std::istringstream lines{std::string(text)};
  std::string line;
  while (std::getline(lines, line)) {
    const std::string_view l = trim(line);
    if (starts_with(l, "PID ")) {
      processes.emplace_back();
      const std::size_t dash = l.find(" - process");
      if (dash != std::string_view::npos) processes.back().name = std::string(trim(l.substr(dash + 10)));
    } else if (starts_with(l, "TID ")) {
      if (processes.empty()) processes.emplace_back();
      processes.back().threads.emplace_back();
    } else if (starts_with(l, "#") && !processes.empty() && !processes.back().threads.empty()) {
      processes.back().threads.back().push_back(normalize_frame(l));
    }
  }
  return processes;
}

std::string thread_text(const std::vector<std::string>& frames) {
  std::string text;
  for (const std::string& frame : frames) text += "    " + frame + "\n";
  return frames.empty() ? "    (no frames)\n" : text;
}

// Threads after the first sorted and equal ones merged, each labelled.
std::string process_text(const Process& process) {
  if (process.threads.empty()) return "  (no threads)\n";
  std::vector<std::string> rest;
  for (std::size_t i = 1; i < process.threads.size(); ++i) rest.push_back(thread_text(process.threads[i]));
  std::sort(rest.begin(), rest.end());
  std::string out = "  thread 1:\n" + thread_text(process.threads[0]);
  std::size_t number = 2;
  for (std::size_t i = 0; i < rest.size();) {
    std::size_t same = 1;
    while (i + same < rest.size() && rest[i + same] == rest[i]) ++same;
    out += same == 1 ? "  thread " + std::to_string(number) + ":\n"
                     : "  threads " + std::to_string(number) + "-" + std::to_string(number + same - 1) + " (" +
                           std::to_string(same) + " alike):\n";
    out += rest[i];
    number += same;
    i += same;
  }
  return out;
}

}  // namespace

std::string normalize_frame(std::string_view line) {
  std::string_view rest = trim(line);
  if (starts_with(rest, "#")) next_word(rest);  // "#3"
  rest = trim(rest);
  if (starts_with(rest, "0x")) next_word(rest);
  rest = trim(rest);
  std::string module;  // eu-stack -m: " - /path/of/module" ends the line
  const std::size_t dash = starts_with(rest, "- ") ? 0 : rest.rfind(" - ");
  if (dash != std::string_view::npos) {
    std::string_view path = trim(rest.substr(dash + (dash == 0 ? 2 : 3)));
    module = std::string(path.substr(std::min(path.size(), path.rfind('/') + 1)));
    rest = dash == 0 ? std::string_view() : trim(rest.substr(0, dash));
  }
  std::string symbol(rest);
  if (const std::size_t at = symbol.find('@'); at != std::string::npos && at > 0) symbol.erase(at);
  if (symbol.empty() || symbol == "-") symbol = "??";
  return module.empty() || symbol != "??" ? symbol : symbol + " (" + module + ")";
}

std::string normalize_stacks(std::string_view eu_stack_text) {
  const std::vector<Process> processes = parse(eu_stack_text);
  if (processes.empty()) return "  (no stack)\n";
  if (processes.size() == 1) return process_text(processes[0]);
  std::string out;
  for (std::size_t i = 0; i < processes.size(); ++i) {
    out += (i == 0 ? "process " : "child process ") + std::to_string(i + 1) +
           (processes[i].name.empty() ? "" : " (" + processes[i].name + ")") + ":\n";
    out += process_text(processes[i]);
  }
  return out;
}

std::string rank_ranges(const std::vector<int>& ranks) {
  std::string out;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + std::to_string(ranks[i]);
    if (j > i) out += "-" + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out;
}

std::vector<StackGroup> group_stacks(const std::vector<RankStacks>& ranks) {
  std::vector<RankStacks> sorted = ranks;
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.rank < b.rank; });
  std::vector<StackGroup> groups;
  std::map<std::pair<bool, std::string>, std::size_t> index;
  for (const RankStacks& r : sorted) {
    std::string text = r.note ? std::string(trim(r.text)) : normalize_stacks(r.text);
    const auto [it, fresh] = index.emplace(std::make_pair(r.note, text), groups.size());
    if (fresh) groups.push_back(StackGroup{{}, {}, std::move(text), r.note});
    StackGroup& group = groups[it->second];
    group.ranks.push_back(r.rank);
    if (std::find(group.hosts.begin(), group.hosts.end(), r.host) == group.hosts.end()) group.hosts.push_back(r.host);
  }
  return groups;
}

std::string format_group(const StackGroup& group) {
  std::string hosts;
  for (const std::string& host : group.hosts) hosts += (hosts.empty() ? "" : ", ") + host;
  const std::string head =
      (group.ranks.size() == 1 ? "rank " : "ranks ") + rank_ranges(group.ranks) + " (" + hosts + "):";
  return group.note ? head + " no stack: " + group.text + "\n" : head + "\n" + group.text;
}

}  // namespace trainrun::cli::report
