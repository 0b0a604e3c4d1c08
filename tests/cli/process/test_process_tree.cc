// Finding a job's processes (cli/process/process_tree.h) with real forks:
// children, grandchildren, an orphan reparented to this process as the
// agent is (a subreaper), a zombie left out, and the children lists giving
// what a scan of every /proc/PID/stat gives.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "cli/process/process_tree.h"

using namespace trainrun::cli;

namespace {

pid_t fork_sleeper() {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::pause();
    ::_exit(0);
  }
  return pid;
}

char state_of(pid_t pid) {
  char path[64], text[512] = {};
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  FILE* f = std::fopen(path, "re");
  if (!f) return '?';
  const std::size_t n = std::fread(text, 1, sizeof text - 1, f);
  std::fclose(f);
  const std::string stat(text, n);
  const std::size_t close = stat.rfind(')');
  return close == std::string::npos || close + 2 >= stat.size() ? '?' : stat[close + 2];
}

std::size_t index_of(const std::vector<pid_t>& pids, pid_t pid) {
  return static_cast<std::size_t>(std::find(pids.begin(), pids.end(), pid) - pids.begin());
}

}  // namespace

TEST_CASE("descendants: children, grandchildren and orphans of a subreaper, parents first, never zombies") {
  REQUIRE(::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
  int pids[2];
  REQUIRE(::pipe(pids) == 0);
  const pid_t child = ::fork();
  if (child == 0) {
    const pid_t grandchild = fork_sleeper();
    const pid_t middle = ::fork();
    if (middle == 0) {  // leaves its own child behind: reparented to this test, the subreaper
      const pid_t orphan = fork_sleeper();
      ::write(pids[1], &orphan, sizeof orphan);
      ::_exit(0);
    }
    ::waitpid(middle, nullptr, 0);
    ::write(pids[1], &grandchild, sizeof grandchild);
    ::pause();
    ::_exit(0);
  }
  const pid_t zombie = ::fork();
  if (zombie == 0) ::_exit(0);
  pid_t orphan = 0, grandchild = 0;
  REQUIRE(::read(pids[0], &orphan, sizeof orphan) == sizeof orphan);
  REQUIRE(::read(pids[0], &grandchild, sizeof grandchild) == sizeof grandchild);
  ::close(pids[0]);
  ::close(pids[1]);
  for (int i = 0; i < 500 && state_of(zombie) != 'Z'; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(state_of(zombie) == 'Z');

  const std::vector<pid_t> found = descendants_of(::getpid());
  CHECK(found.size() == 3);
  for (pid_t pid : {child, grandchild, orphan}) CHECK_MESSAGE(index_of(found, pid) < found.size(), pid);
  CHECK(index_of(found, zombie) == found.size());
  CHECK(index_of(found, child) < index_of(found, grandchild));
  std::vector<pid_t> sorted = found, scanned = descendants_by_scan(::getpid());
  std::sort(sorted.begin(), sorted.end());
  std::sort(scanned.begin(), scanned.end());
  CHECK(sorted == scanned);

  CHECK(signal_descendants(::getpid(), SIGKILL) == 3);
  for (pid_t pid : {child, grandchild, orphan}) ::kill(pid, SIGKILL);  // whatever signal_descendants missed
  while (::waitpid(-1, nullptr, 0) > 0 || errno == EINTR) {
  }
  CHECK(descendants_of(::getpid()).empty());
  CHECK(descendants_by_scan(::getpid()).empty());
}
