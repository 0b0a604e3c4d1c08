#include "cli/process/process_tree.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <unordered_set>

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

// Whether the kernel lists each thread's children (/proc/PID/task/TID/
// children: Linux 3.5+ with CONFIG_PROC_CHILDREN), asked once.
bool kernel_lists_children() {
  static const bool listed = [] {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/self/task/%d/children", static_cast<int>(::gettid()));
    return ::access(path, R_OK) == 0;
  }();
  return listed;
}

// The children of `pid`: those of each of its threads (a child's parent is
// the thread that forked it). Empty once `pid` is gone.
std::vector<pid_t> children_of(pid_t pid) {
  std::vector<pid_t> out;
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/task", static_cast<int>(pid));
  DIR* tasks = ::opendir(path);
  if (!tasks) return out;
  while (dirent* entry = ::readdir(tasks)) {
    const long tid = std::strtol(entry->d_name, nullptr, 10);
    if (tid <= 0) continue;
    std::snprintf(path, sizeof path, "/proc/%d/task/%ld/children", static_cast<int>(pid), tid);
    FILE* f = std::fopen(path, "re");
    if (!f) continue;  // the thread ended
    for (int child; std::fscanf(f, "%d", &child) == 1;) out.push_back(static_cast<pid_t>(child));
    std::fclose(f);
  }
  ::closedir(tasks);
  return out;
}

// Down the tree from `root`, parents before children: `children(pid)` its
// children, `state(pid)` its state letter; zombies are walked through but
// not listed. A pid reused during the walk never loops it.
template <typename Children, typename State>
std::vector<pid_t> walk_down(pid_t root, Children children, State state) {
  std::vector<pid_t> out;
  std::unordered_set<pid_t> seen = {root};
  std::vector<pid_t> frontier = {root};
  while (!frontier.empty()) {
    const pid_t parent = frontier.back();
    frontier.pop_back();
    for (pid_t child : children(parent)) {
      if (!seen.insert(child).second) continue;
      if (state(child) != 'Z') out.push_back(child);
      frontier.push_back(child);
    }
  }
  return out;
}

}  // namespace

std::vector<pid_t> descendants_by_scan(pid_t root) {
  std::unordered_map<pid_t, std::vector<pid_t>> children;
  std::unordered_map<pid_t, char> state;
  DIR* proc = ::opendir("/proc");
  if (!proc) return {};
  while (dirent* entry = ::readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::strtol(entry->d_name, nullptr, 10));
    Stat stat;
    if (pid > 0 && read_stat(pid, stat)) {
      children[stat.ppid].push_back(pid);
      state[pid] = stat.state;
    }
  }
  ::closedir(proc);
  const std::vector<pid_t> none;
  return walk_down(
      root,
      [&](pid_t pid) -> const std::vector<pid_t>& {
        const auto it = children.find(pid);
        return it == children.end() ? none : it->second;
      },
      [&](pid_t pid) { return state[pid]; });
}

// From the root down its children lists: only the job's processes are read,
// where a scan of /proc reads every process on the machine (ms on a busy
// host, and the agent asks at every job's end).
std::vector<pid_t> descendants_of(pid_t root) {
  if (!kernel_lists_children()) return descendants_by_scan(root);
  return walk_down(root, children_of, [](pid_t pid) {
    Stat stat;
    return read_stat(pid, stat) ? stat.state : 'Z';  // gone: as good as a zombie
  });
}

int signal_descendants(pid_t root, int sig) {
  int count = 0;
  for (pid_t pid : descendants_of(root)) {
    if (::kill(pid, sig) == 0) ++count;
  }
  return count;
}

}  // namespace trainrun::cli
