// two_level_bench: allreduce on 2 network-namespace hosts x 2 ranks
// (tests/integration/ssh_hosts.h, as the multi-host tests make them), the
// two-level path (shared memory within a host, TCP between hosts; the
// default) beside the flat TCP mesh (--no-shm), alternating rounds; prints
// the median p50 time and busbw per size and their ratios. Root only.
//   build/tests/two_level_bench build/trainrun build/examples/allreduce_bench [ROUNDS]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/process_runner.h"
#include "tests/integration/ssh_hosts.h"

using namespace trainrun::test;

namespace {

struct Sample {
  std::vector<double> p50_us, busbw;
};
using Table = std::map<long long, Sample>;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// allreduce_bench --csv rows: bytes,count,type,redop,iters,time_us,p50_us,algbw,busbw
void add_rows(const std::string& csv, Table& table) {
  std::istringstream in(csv);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] < '0' || line[0] > '9') continue;
    std::vector<std::string> f;
    std::stringstream fields(line);
    for (std::string x; std::getline(fields, x, ',');) f.push_back(x);
    if (f.size() < 9) continue;
    Sample& s = table[std::atoll(f[0].c_str())];
    s.p50_us.push_back(std::atof(f[6].c_str()));
    s.busbw.push_back(std::atof(f[8].c_str()));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: two_level_bench TRAINRUN ALLREDUCE_BENCH [ROUNDS]\n";
    return 2;
  }
  const int rounds = argc > 3 ? std::max(1, std::atoi(argv[3])) : 3;
  const std::unique_ptr<SshHosts> hosts = SshHosts::make_or_say_why();
  if (!hosts) return 77;
  const std::vector<std::string> sweep = {argv[2], "--min-bytes", "4", "--max-bytes", "64M", "--csv"};
  std::map<std::string, Table> tables;
  for (int round = 0; round < rounds; ++round) {
    for (const std::string mode : {"two-level", "flat"}) {
      std::vector<std::string> args = {argv[1], "-H", "h1:2,h2:2", "-np", "4", "--no-tag-output", "--backend", "tcp"};
      if (mode == "flat") args.push_back("--no-shm");
      args.insert(args.end(), sweep.begin(), sweep.end());
      ProcessOptions options;
      options.timeout = std::chrono::seconds(900);
      const ProcessResult r = run_process(hosts->client_argv(args), options);
      if (r.exit_code != 0) {
        std::cerr << mode << " failed (exit " << r.exit_code << "): " << r.err << "\n";
        return 1;
      }
      add_rows(r.out, tables[mode]);
    }
  }
  std::printf("# allreduce float32 sum, 2 namespace hosts x 2 ranks, median of %d alternating rounds\n", rounds);
  std::printf("# %10s %12s %12s %7s %12s %12s %9s\n", "bytes", "flat p50 us", "2lvl p50 us", "ratio", "flat GB/s",
              "2lvl GB/s", "bw ratio");
  for (const auto& [bytes, flat] : tables["flat"]) {
    const Sample& two = tables["two-level"][bytes];
    if (two.p50_us.empty()) continue;
    const double fp = median(flat.p50_us), tp = median(two.p50_us);
    const double fb = median(flat.busbw), tb = median(two.busbw);
    std::printf("  %10lld %12.2f %12.2f %7.3f %12.3f %12.3f %9.3f\n", bytes, fp, tp, tp / fp, fb, tb,
                fb > 0 ? tb / fb : 0.0);
  }
  return 0;
}
