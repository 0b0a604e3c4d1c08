// SSH launch benchmark: launch-to-exit of a no-op 16-rank job on the four
// namespace hosts of tests/integration/ssh_hosts.h, beside what horovodrun
// does for the same job: one plain `ssh host true` per rank, all at once.
// Rounds alternate between the two so that load from the rest of the
// machine falls on both alike; medians and the ratio are printed.
//   ssh_launch_bench TRAINRUN [ROUNDS] [RANK_PROGRAM]
// With RANK_PROGRAM, a third row: 16 ranks that also init the library and
// meet in a barrier. Root only (it makes network namespaces); exits 77
// with the reason otherwise.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "tests/integration/process_runner.h"
#include "tests/integration/ssh_hosts.h"

using namespace trainrun::test;

namespace {

constexpr int kRanksPerHost = 4;

struct Row {
  std::string what;
  std::vector<std::string> argv;
  std::vector<double> seconds;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

std::string hosts_option() {
  std::string text;
  for (int h = 1; h <= SshHosts::kHosts; ++h) {
    text += (h > 1 ? "," : "") + std::string("h") + std::to_string(h) + ":" + std::to_string(kRanksPerHost);
  }
  return text;
}

// 16 `ssh hN true` at once from one shell, as horovodrun's launcher does.
std::string ssh_per_rank_script() {
  std::string script;
  for (int h = 1; h <= SshHosts::kHosts; ++h) {
    for (int k = 0; k < kRanksPerHost; ++k) script += "ssh h" + std::to_string(h) + " true & ";
  }
  return script + "wait";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: ssh_launch_bench TRAINRUN [ROUNDS] [RANK_PROGRAM]\n";
    return 2;
  }
  const std::string trainrun = argv[1];
  const int rounds = argc > 2 ? std::max(1, std::atoi(argv[2])) : 9;
  const std::unique_ptr<SshHosts> hosts = SshHosts::make_or_say_why();
  if (!hosts) return 77;
  const int np = SshHosts::kHosts * kRanksPerHost;
  std::vector<Row> rows = {
      {"trainrun -np 16 -H h1:4,..,h4:4 true", hosts->client_argv({trainrun, "-H", hosts_option(), "/bin/true"}), {}},
      {"16 x `ssh hN true` in parallel", hosts->client_argv({"/bin/sh", "-c", ssh_per_rank_script()}), {}},
  };
  if (argc > 3) {
    rows.push_back(
        {"trainrun, ranks init + barrier", hosts->client_argv({trainrun, "-H", hosts_option(), argv[3], "init"}), {}});
  }
  // One warm-up round each (page cache, ARP), then alternate.
  for (int round = -1; round < rounds; ++round) {
    for (Row& row : rows) {
      const ProcessResult r = run_process(row.argv);
      if (r.exit_code != 0) {
        std::cerr << row.what << " failed (exit " << r.exit_code << "): " << r.err << "\n";
        return 1;
      }
      if (round >= 0) row.seconds.push_back(r.seconds);
    }
  }
  std::printf("SSH launch, %d ranks on %d namespace hosts, %d alternating rounds\n\n", np, SshHosts::kHosts, rounds);
  std::printf("%-40s %9s %9s %9s\n", "launch-to-exit", "median s", "min s", "max s");
  for (const Row& row : rows) {
    std::printf("%-40s %9.3f %9.3f %9.3f\n", row.what.c_str(), median(row.seconds),
                *std::min_element(row.seconds.begin(), row.seconds.end()),
                *std::max_element(row.seconds.begin(), row.seconds.end()));
  }
  const double ours = median(rows[0].seconds), baseline = median(rows[1].seconds);
  std::printf("\ntrainrun / ssh-per-rank: %.2fx (bar: < 0.5x)   trainrun median %.3f s (bar: < 1.5 s)\n",
              ours / baseline, ours);
  return 0;
}
