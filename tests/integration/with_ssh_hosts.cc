// with_ssh_hosts PROGRAM [ARGS...]: runs PROGRAM (an absolute path) as the
// launcher of the SSH tests' four network-namespace hosts
// (tests/integration/ssh_hosts.h: h1..h4, each with its own sshd), so
// that tests in other languages (the Python Runner's, tests/integrations/python/ssh)
// use real SSH hosts too. PROGRAM sees SSH_HOSTS_LAUNCHER_ADDRESS (the
// launcher's address on the hosts' bridge), SSH_HOSTS (h1,h2,h3,h4), and
// SSH_HOSTS_NETNS / SSH_HOSTS_VETHS (each host's namespace and the bridge
// end of its link, in that order), and SSH_HOSTS_ETC_HOSTS (the /etc/hosts
// the hosts see, for programs that run on a host as a pod: SshHosts::pod_argv).
// SSH_HOSTS_COUNT=N makes N hosts instead of four (up to 64; a benchmark's).
// Exits with PROGRAM's status, 77 (skip) saying why when the hosts cannot
// be made here; the hosts are removed either way.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/integration/ssh_hosts.h"

namespace {

int run_and_wait(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return 1;
  if (pid == 0) {
    ::execv(args[0], args.data());
    std::perror(args[0]);
    std::_Exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argv[1][0] != '/') {
    std::fprintf(stderr, "usage: with_ssh_hosts /ABSOLUTE/PROGRAM [ARGS...]\n");
    return 2;
  }
  const char* count = std::getenv("SSH_HOSTS_COUNT");
  const auto hosts =
      trainrun::test::SshHosts::make_or_say_why(count ? std::atoi(count) : trainrun::test::SshHosts::kHosts);
  if (!hosts) return 77;
  ::setenv("SSH_HOSTS_LAUNCHER_ADDRESS", hosts->launcher_address().c_str(), 1);
  // Host h's name, network namespace and the launcher-side end of its link,
  // by host (for programs that shape the links, tests/bench/tcp_streams_bench.sh).
  std::string names, netns, veths;
  for (int h = 1; h <= hosts->count(); ++h) {
    names += (h > 1 ? ",h" : "h") + std::to_string(h);
    netns += (h > 1 ? "," : "") + hosts->netns(h);
    veths += (h > 1 ? "," : "") + hosts->veth(h);
  }
  ::setenv("SSH_HOSTS", names.c_str(), 1);
  ::setenv("SSH_HOSTS_NETNS", netns.c_str(), 1);
  ::setenv("SSH_HOSTS_ETC_HOSTS", hosts->etc_hosts().c_str(), 1);  // what each host's /etc/hosts holds
  ::setenv("SSH_HOSTS_VETHS", veths.c_str(), 1);
  return run_and_wait(hosts->client_argv(std::vector<std::string>(argv + 1, argv + argc)));
}
