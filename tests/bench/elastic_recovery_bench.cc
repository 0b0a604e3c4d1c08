// Recovery time of elastic jobs: a job of 64 MiB allreduces
// (tests/integration/elastic_program) loses one rank to kill -9 after its
// third step; recovery is the time from the last step completed before the
// kill to the first step completed after it (rank 0's clock), so it holds
// the failure's detection, the launcher's decision, the survivors' new
// world (rendezvous, mesh, shared memory) and one step of the new world.
// One job per kill, the victim rotating over the workers.
//
//   build/tests/elastic_recovery_bench build/trainrun build/tests/elastic_program [KILLS] [MB] [HOSTS]
//
// Runs np=4 on this machine, then 2 hosts x 2 ranks over SSH (network
// namespaces, root only; skipped with the reason otherwise), then, with
// HOSTS (4-64), HOSTS hosts x 1 rank.
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "tests/integration/elastic_steps.h"
#include "tests/integration/process_runner.h"
#include "tests/integration/ssh_hosts.h"

using namespace trainrun::test;

namespace {

struct Sample {
  long long recovery_ms = -1;
  long long step_ms = -1;  // median step before the kill
};

// One job of `ranks` ranks: kill `victim` after step 3; the recovery it shows.
Sample one_kill(const std::function<std::vector<std::string>(const std::string& tag)>& argv, int victim,
                int ranks = 4) {
  ProcessOptions options;
  options.env.push_back(unique_tag());
  options.timeout = std::chrono::minutes(3);
  const std::string tag = options.env.back();
  Child job(argv(tag), options);
  if (!job.wait_for_output("] step 3 size " + std::to_string(ranks), std::chrono::seconds(120))) return {};
  const pid_t pid = worker_pid(tag, victim);
  if (pid > 0) ::kill(pid, SIGKILL);
  const ProcessResult r = job.wait();
  const std::vector<ElasticStep> steps = elastic_steps(r.out);
  Sample s;
  s.recovery_ms = r.exit_code == 0 ? recovery_ms(steps, ranks) : -1;
  std::vector<long long> gaps;
  for (std::size_t i = 1; i < steps.size() && steps[i].size == ranks; ++i)
    gaps.push_back(steps[i].t_ms - steps[i - 1].t_ms);
  if (!gaps.empty()) {
    std::nth_element(gaps.begin(), gaps.begin() + gaps.size() / 2, gaps.end());
    s.step_ms = gaps[gaps.size() / 2];
  }
  if (s.recovery_ms < 0) std::cerr << "a job failed (exit " << r.exit_code << "):\n" << r.err << "\n";
  return s;
}

long long percentile(std::vector<long long> v, double p) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

void row(const char* setup, const std::vector<Sample>& samples) {
  std::vector<long long> recovery, step;
  for (const Sample& s : samples) {
    if (s.recovery_ms >= 0) recovery.push_back(s.recovery_ms);
    if (s.step_ms >= 0) step.push_back(s.step_ms);
  }
  std::printf("%-14s %5zu/%-3zu %10lld %8lld %8lld %8lld %12lld\n", setup, recovery.size(), samples.size(),
              percentile(recovery, 0.5), percentile(recovery, 0.9), percentile(recovery, 0.0),
              percentile(recovery, 1.0), percentile(step, 0.5));
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: elastic_recovery_bench TRAINRUN ELASTIC_PROGRAM [KILLS] [MB] [HOSTS]\n";
    return 2;
  }
  const std::string trainrun = argv[1], program = argv[2];
  const int kills = argc > 3 ? std::atoi(argv[3]) : 10;
  const std::string mb = argc > 4 ? argv[4] : "64";
  const std::vector<std::string> job{"--min-np", "2", program, "--steps", "8", "--mb", mb};
  const int many = argc > 5 ? std::atoi(argv[5]) : 0;
  std::printf("recovery after kill -9 of one rank (%s MiB allreduces), ms\n", mb.c_str());
  std::printf("%-14s %9s %10s %8s %8s %8s %12s\n", "setup", "ok/kills", "median", "p90", "min", "max", "step (med)");

  std::vector<Sample> local;
  for (int i = 0; i < kills; ++i) {
    local.push_back(one_kill(
        [&](const std::string&) {
          std::vector<std::string> a{trainrun, "--local", "-np", "4"};
          a.insert(a.end(), job.begin(), job.end());
          return a;
        },
        i % 4));
  }
  row("local np=4", local);

  std::unique_ptr<SshHosts> hosts = SshHosts::make_or_say_why();
  if (!hosts) return 0;
  std::vector<Sample> remote;
  for (int i = 0; i < kills; ++i) {
    remote.push_back(one_kill(
        [&](const std::string& tag) {
          std::vector<std::string> a{trainrun, "-x", tag, "-H", "h1:2,h2:2", "-np", "4"};
          a.insert(a.end(), job.begin(), job.end());
          return hosts->client_argv(a);
        },
        i % 4));
  }
  row("2 hosts x 2", remote);
  if (many < SshHosts::kHosts || many > SshHosts::kMaxHosts) return 0;
  remote.clear();
  hosts.reset();
  const std::unique_ptr<SshHosts> more = SshHosts::make_or_say_why(many);
  std::string list;
  for (int h = 1; h <= many; ++h) list += (h > 1 ? ",h" : "h") + std::to_string(h) + ":1";
  for (int i = 0; i < kills; ++i) {
    remote.push_back(one_kill(
        [&](const std::string& tag) {
          std::vector<std::string> a{trainrun, "-x", tag, "-H", list};
          a.insert(a.end(), job.begin(), job.end());
          return more->client_argv(a);
        },
        i % many, many));
  }
  row((std::to_string(many) + " hosts x 1").c_str(), remote);
  return 0;
}
