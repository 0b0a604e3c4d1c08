// scale_bench: the launcher as hosts grow, trainrun beside Open MPI's
// mpirun. For each host count it makes that many network-namespace hosts
// (tests/integration/ssh_hosts.h: an sshd in each, on one bridge), one rank
// a host, and prints
//   - launch-to-exit of /bin/true, and of init + one barrier + exit
//     (build/tests/bench/noop beside mpi_noop, when both are built next to
//     TRAINRUN), the two launchers alternating, medians;
//   - each launcher's threads, open descriptors and resident memory while
//     every host runs its rank (/bin/sleep), read from /proc;
//   - with --tree-radix K, trainrun again with its agents started as a tree
//     of that radix (the launcher reaches K hosts, they reach the rest);
//   - "ssh": OpenSSH's ssh to every host at once, each running /bin/true
//     there: the floor any SSH launcher pays (a session and a shell a host,
//     no agent, no rank), beside both launchers.
//   scale_bench TRAINRUN [--rounds R] [--hosts 8,16,32] [--tree-radix K]
// Root only (it makes network namespaces); exits 77 with the reason
// otherwise. The machine's other load falls on both launchers alike.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/process_runner.h"
#include "tests/integration/ssh_hosts.h"

using namespace trainrun::test;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

struct Load {
  int threads = -1, descriptors = -1;
  long rss_kib = -1;
};

using ArgvFor = std::function<std::vector<std::string>(const SshHosts&, const std::string& trainrun,
                                                       std::vector<std::string> program)>;

struct Launcher {
  std::string name;
  // The launcher's argv for one rank of `program` on each host.
  ArgvFor argv;
  std::string noop;  // its init + barrier + exit program; empty: not measured
  std::vector<double> seconds, noop_seconds;
  Load load;
  bool floor = false;  // the ssh floor: no rank, so no noop and no load to read
};

// trainrun over the hosts; `tree_radix` > 0: its agents started as a tree.
ArgvFor trainrun_argv(int tree_radix) {
  return [tree_radix](const SshHosts& hosts, const std::string& trainrun, std::vector<std::string> program) {
    std::string list;
    for (int h = 1; h <= hosts.count(); ++h) list += (h > 1 ? ",h" : "h") + std::to_string(h) + ":1";
    std::vector<std::string> argv{trainrun, "-H", list};
    if (tree_radix > 0) argv.insert(argv.end(), {"--tree-radix", std::to_string(tree_radix)});
    argv.insert(argv.end(), program.begin(), program.end());
    return argv;
  };
}

// mpirun over the same hosts (SshHosts::mpirun_argv, as cross_host_bench).
std::vector<std::string> mpirun_argv(const SshHosts& hosts, const std::string&, std::vector<std::string> program) {
  std::string list;
  for (int h = 1; h <= hosts.count(); ++h) list += (h > 1 ? "," : "") + hosts.address(h) + ":1";
  std::vector<std::string> argv = hosts.mpirun_argv(hosts.count(), list);
  argv.insert(argv.end(), program.begin(), program.end());
  return argv;
}

// The floor: `ssh HOST program` to every host at once, failing if any does.
std::vector<std::string> ssh_argv(const SshHosts& hosts, const std::string&, std::vector<std::string> program) {
  std::vector<std::string> argv{"/bin/sh", "-c",
                                "p=$1; shift; for h; do ssh -n \"$h\" \"$p\" & pids=\"$pids $!\"; done; "
                                "for j in $pids; do wait $j || exit 1; done",
                                "sh", program.at(0)};
  for (int h = 1; h <= hosts.count(); ++h) argv.push_back(hosts.address(h));
  return argv;
}

// The launcher's load once every host runs its rank (a sleep).
Load load_while_running(const SshHosts& hosts, const Launcher& launcher, const std::string& trainrun) {
  Child job(hosts.client_argv(launcher.argv(hosts, trainrun, {"/bin/sleep", "60"})), ProcessOptions{});
  Load load;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    if (static_cast<int>(hosts.processes_on_hosts("sleep").size()) >= hosts.count()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));  // settled
      load = {proc_entries(job.pid(), "task"), proc_entries(job.pid(), "fd"), proc_status_kib(job.pid(), "VmRSS")};
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  job.signal(SIGTERM);
  job.wait();
  return load;
}

double timed(const SshHosts& hosts, const Launcher& l, const std::string& trainrun, const std::string& program) {
  const ProcessResult r = run_process(hosts.client_argv(l.argv(hosts, trainrun, {program})));
  if (r.exit_code != 0) {
    std::cerr << l.name << " " << program << " at " << hosts.count() << " hosts failed (exit " << r.exit_code
              << "): " << r.err << "\n";
    std::exit(1);
  }
  return r.seconds;
}

bool measure(int count, int rounds, const std::string& trainrun, const std::string& noop, const std::string& mpi_noop,
             int tree_radix) {
  const std::unique_ptr<SshHosts> hosts = SshHosts::make_or_say_why(count);
  if (!hosts) return false;
  std::vector<Launcher> launchers = {{"trainrun", trainrun_argv(0), noop, {}, {}, {}},
                                     {"mpirun", mpirun_argv, mpi_noop, {}, {}, {}}};
  if (tree_radix > 0) {
    launchers.push_back({"tree " + std::to_string(tree_radix), trainrun_argv(tree_radix), noop, {}, {}, {}});
  }
  launchers.push_back({"ssh", ssh_argv, "", {}, {}, {}, true});
  const bool noops = !noop.empty() && !mpi_noop.empty();
  for (int round = -1; round < rounds; ++round) {  // a warm-up round each (page cache, ARP)
    for (Launcher& l : launchers) {
      const double seconds = timed(*hosts, l, trainrun, "/bin/true");
      const double noop_seconds = noops && !l.floor ? timed(*hosts, l, trainrun, l.noop) : 0;
      if (round < 0) continue;
      l.seconds.push_back(seconds);
      l.noop_seconds.push_back(noop_seconds);
    }
  }
  for (Launcher& l : launchers) {
    if (!l.floor) l.load = load_while_running(*hosts, l, trainrun);
  }
  const Launcher& theirs = launchers[1];
  for (const Launcher& l : launchers) {
    std::printf("%6d %-9s %10.3f", count, l.name.c_str(), median(l.seconds));
    if (l.floor) {
      std::printf(" %12s %8s %12s %9s", "-", "-", "-", "-");
    } else {
      std::printf(" %12.3f %8d %12d %9.1f", noops ? median(l.noop_seconds) : 0.0, l.load.threads, l.load.descriptors,
                  l.load.rss_kib / 1024.0);
    }
    if (&l != &theirs) {
      std::printf("   %.2fx", median(l.seconds) / median(theirs.seconds));
      if (noops && !l.floor) std::printf(" %.2fx", median(l.noop_seconds) / median(theirs.noop_seconds));
    }
    std::printf("\n");
  }
  std::fflush(stdout);
  return true;
}

std::vector<int> parse_counts(const std::string& text) {
  std::vector<int> counts;
  std::stringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    const int n = std::atoi(item.c_str());
    if (n < SshHosts::kHosts || n > SshHosts::kMaxHosts) {
      std::cerr << "scale_bench: error: --hosts: '" << item << "' is not a host count from " << SshHosts::kHosts
                << " to " << SshHosts::kMaxHosts << "\n";
      std::exit(2);
    }
    counts.push_back(n);
  }
  return counts;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: scale_bench TRAINRUN [--rounds R] [--hosts 8,16,32] [--tree-radix K]\n";
    return 2;
  }
  const std::string trainrun = argv[1];
  int rounds = 5, tree_radix = 0;
  std::vector<int> counts = {8, 16, 32};
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string option = argv[i];
    if (option == "--rounds") rounds = std::max(1, std::atoi(argv[i + 1]));
    else if (option == "--hosts") counts = parse_counts(argv[i + 1]);
    else if (option == "--tree-radix") tree_radix = std::max(1, std::atoi(argv[i + 1]));
    else {
      std::cerr << "scale_bench: error: unknown option '" << option << "'\n";
      return 2;
    }
  }
  std::printf("Launch at scale: one rank on each network-namespace host, %d alternating rounds, %ld CPUs\n\n", rounds,
              sysconf(_SC_NPROCESSORS_ONLN));
  // init + barrier + exit: tests/bench's noop and mpi_noop, built beside trainrun.
  const std::string bench = trainrun.substr(0, trainrun.find_last_of('/') + 1) + "tests/bench/";
  const std::string noop = ::access((bench + "noop").c_str(), X_OK) == 0 ? bench + "noop" : "";
  const std::string mpi_noop = ::access((bench + "mpi_noop").c_str(), X_OK) == 0 ? bench + "mpi_noop" : "";
  std::printf("%6s %-9s %10s %12s %8s %12s %9s   %s\n", "hosts", "launcher", "true (s)", "init+bar (s)", "threads",
              "descriptors", "RSS (MB)", "trainrun/mpirun (true, init)");
  for (int count : counts) {
    if (!measure(count, rounds, trainrun, noop, mpi_noop, tree_radix)) return 77;
  }
  return 0;
}
