#include "cli/process/process_tree.h"

#include <dirent.h>
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>

namespace trainrun::cli {
namespace {

struct Stat {
  pid_t ppid = 0;
  char state = '?';
};

// /proc/PID/stat: "pid (comm) state ppid ..."; comm may hold spaces and ')'.
bool read_stat(pid_t pid, Stat& out) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  FILE* f = std::fopen(path, "re");
  if (!f) return false;
  char buffer[512];
  const std::size_t n = std::fread(buffer, 1, sizeof buffer - 1, f);
  std::fclose(f);
  buffer[n] = '\0';
  const char* close = std::strrchr(buffer, ')');
  if (!close || std::sscanf(close + 1, " %c %d", &out.state, &out.ppid) != 2) return false;
  return true;
}

}  // namespace

std::vector<pid_t> descendants_of(pid_t root) {
  std::unordered_multimap<pid_t, pid_t> children;
  std::unordered_map<pid_t, char> state;
  DIR* proc = ::opendir("/proc");
  if (!proc) return {};
  while (dirent* entry = ::readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::strtol(entry->d_name, nullptr, 10));
    Stat stat;
    if (pid > 0 && read_stat(pid, stat)) {
      children.emplace(stat.ppid, pid);
      state[pid] = stat.state;
    }
  }
  ::closedir(proc);
  std::vector<pid_t> out;
  std::vector<pid_t> frontier = {root};
  while (!frontier.empty()) {
    const pid_t parent = frontier.back();
    frontier.pop_back();
    auto [begin, end] = children.equal_range(parent);
    for (auto it = begin; it != end; ++it) {
      if (state[it->second] != 'Z') out.push_back(it->second);
      frontier.push_back(it->second);
    }
  }
  return out;
}

int signal_descendants(pid_t root, int sig) {
  int count = 0;
  for (pid_t pid : descendants_of(root)) {
    if (::kill(pid, sig) == 0) ++count;
  }
  return count;
}

}  // namespace trainrun::cli
