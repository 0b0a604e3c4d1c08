// Finding and ending every descendant of a process, read from /proc. With
// PR_SET_CHILD_SUBREAPER set on the root, orphans (double-forked or setsid
// escapees) are reparented to it, so "descendants of the agent" is the whole
// job on that host. Stateless; reads /proc on each call: the root's children
// lists down the tree where the kernel has them, else every /proc/PID/stat.
#pragma once

#include <sys/types.h>

#include <vector>

namespace trainrun::cli {

// Live (non-zombie) descendants of `root`, parents before children.
std::vector<pid_t> descendants_of(pid_t root);
// The same from every process's /proc/PID/stat: all of the machine's
// processes are read (descendants_of's way where the kernel lists no
// children).
std::vector<pid_t> descendants_by_scan(pid_t root);
// Sends `sig` to every live descendant of `root`; returns how many got it.
int signal_descendants(pid_t root, int sig);

}  // namespace trainrun::cli
