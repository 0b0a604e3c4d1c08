// cross_host_bench: collectives across hosts on shaped links, trainrun beside
// Open MPI and Gloo. It makes the network-namespace hosts itself
// (tests/integration/ssh_hosts.h: sshd in each, on one bridge), shapes every
// host's link to --rate in both directions (tc tbf on the host's eth0 and
// on its veth end at the bridge), runs each program over the same hosts,
// alternating programs within each round, and prints per size the median
// over rounds of each program's p50 time and busbw, the wire limit and the
// ratios that issue 30's goals are stated in. Everything it made goes with
// the hosts (their destructor, or their reaper after a crash or Ctrl-C).
// Root only; exits 77 with the reason when the hosts cannot be made.
//
//   build/tests/cross_host_bench BUILD [--rounds 3] [--layouts 2x1,2x2]
//     [--collectives allreduce,allgather,broadcast,reducescatter] [--programs LIST]
//     [--min-bytes 4] [--max-bytes 64M] [--factor 4] [--budget 64M] [--rate 1gbit] [--burst 128kb]
//     [--trainrun-env NAME=VALUE]... [--alt-env NAME=VALUE]... [--base BUILD2]
//
// Programs (all by default; mpi* and gloo only when built):
//   trainrun     trainrun -H h1:L,h2:L --backend gloo allreduce_bench (its default transports)
//   flat         the same with --no-shm (the TCP mesh between every pair of ranks)
//   base         BUILD2's trainrun and allreduce_bench, default transports (--base; for A/B runs)
//   alt          trainrun with the --alt-env settings too (e.g. TRAINRUN_SWITCH_POINTS=two-level=never)
//   mpi          mpirun over the same hosts, btl self,vader,tcp, mpi_allreduce_bench
//   mpi-yield    + --mca mpi_yield_when_idle 1
//   mpi-han      + --mca coll_han_priority 100 and yield when idle
//   mpi-links2   + --mca btl_tcp_links 2 and yield when idle
//   gloo         plain Gloo (gloo_allreduce_bench; allreduce only), started by trainrun
// busbw follows nccl-tests; the wire limit is what one link per host allows:
// allreduce, allgather and reducescatter R*H/(H-1)*(N-1)/N, broadcast R (R: --rate in GB/s,
// H hosts, N ranks).
#include <sys/stat.h>
#include <unistd.h>

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

struct Options {
  std::string build, base;
  int rounds = 3;
  std::vector<std::string> layouts = {"2x1", "2x2"};
  std::vector<std::string> collectives = {"allreduce", "allgather", "broadcast", "reducescatter"};
  std::vector<std::string> programs = {"trainrun", "flat", "base", "mpi", "mpi-yield", "mpi-han", "mpi-links2", "gloo"};
  std::string min_bytes = "4", max_bytes = "64M", factor = "4", budget = "64M", rate = "1gbit";
  // The token bucket's depth: small, or messages up to it cross at the
  // unshaped speed after an idle moment and small sizes measure no link.
  std::string burst = "128kb";
  std::vector<std::string> trainrun_env, alt_env;
};

struct Sample {
  std::vector<double> p50_us, busbw;
};
using Table = std::map<long long, Sample>;  // by size

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, sep);) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// bench_harness --csv rows: bytes,count,type,redop,iters,time_us,p50_us,algbw,busbw
void add_rows(const std::string& csv, Table& table) {
  std::istringstream in(csv);
  for (std::string line; std::getline(in, line);) {
    const std::vector<std::string> f = split(line, ',');
    if (f.size() < 9 || f[0][0] < '0' || f[0][0] > '9') continue;
    Sample& s = table[std::atoll(f[0].c_str())];
    s.p50_us.push_back(std::atof(f[6].c_str()));
    s.busbw.push_back(std::atof(f[8].c_str()));
  }
}

// "1gbit", "500mbit": bytes per second in GB/s.
double rate_gbs(const std::string& rate) {
  const double v = std::atof(rate.c_str());
  if (rate.find("gbit") != std::string::npos) return v / 8;
  if (rate.find("mbit") != std::string::npos) return v / 8 / 1000;
  return 0;
}

bool exists(const std::string& path) { return ::access(path.c_str(), X_OK) == 0; }

class Bench {
 public:
  Bench(const Options& options, SshHosts& hosts) : o_(options), hosts_(hosts) {}

  void shape(int host_count) {
    for (int h = 1; h <= host_count; ++h) {
      const std::vector<std::string> tbf = {"root", "tbf", "rate", o_.rate, "burst", o_.burst, "latency", "10ms"};
      std::vector<std::string> in = {"/usr/sbin/tc", "qdisc", "replace", "dev", hosts_.veth(h)};
      std::vector<std::string> out = {"/usr/sbin/ip", "netns",   "exec", hosts_.netns(h), "/usr/sbin/tc",
                                      "qdisc",        "replace", "dev",  "eth0"};
      in.insert(in.end(), tbf.begin(), tbf.end());
      out.insert(out.end(), tbf.begin(), tbf.end());
      for (const auto& argv : {in, out}) {
        const ProcessResult r = run_process(argv);
        if (r.exit_code != 0) throw std::runtime_error("tc failed: " + r.err);
      }
    }
  }

  // One sweep of `program`; false (and why on stderr) when it failed.
  bool run(const std::string& program, int host_count, int per_host, const std::string& collective, Table& table) {
    const std::vector<std::string> argv = command(program, host_count, per_host, collective);
    if (argv.empty()) return false;
    ProcessOptions options;
    options.timeout = std::chrono::seconds(900);
    options.new_process_group = false;  // Ctrl-C reaches it too
    options.env = {"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"};
    const ProcessResult r = run_process(hosts_.client_argv(argv), options);
    if (r.exit_code != 0) {
      std::cerr << program << " " << collective << " failed (exit " << r.exit_code << "): " << r.err.substr(0, 2000)
                << "\n";
      return false;
    }
    add_rows(r.out, table);
    return true;
  }

  bool available(const std::string& program) const {
    if (program == "base") return !o_.base.empty();
    if (program == "alt") return !o_.alt_env.empty();
    if (program.rfind("mpi", 0) == 0) return exists(o_.build + "/tests/bench/mpi_allreduce_bench");
    if (program == "gloo") return exists(o_.build + "/tests/bench/gloo_allreduce_bench");
    return true;
  }

 private:
  std::vector<std::string> sweep(const std::string& collective) const {
    return {"--collective", collective, "--min-bytes", o_.min_bytes, "--max-bytes", o_.max_bytes, "--factor", o_.factor,
            "--budget",     o_.budget,  "--max-iters", "200",        "--warmup",    "3",          "--csv"};
  }

  std::vector<std::string> command(const std::string& program, int host_count, int per_host,
                                   const std::string& collective) const {
    const int np = host_count * per_host;
    std::string trainrun_hosts, mpi_hosts;
    for (int h = 1; h <= host_count; ++h) {
      trainrun_hosts += (h > 1 ? "," : "") + ("h" + std::to_string(h)) + ":" + std::to_string(per_host);
      mpi_hosts += (h > 1 ? "," : "") + hosts_.address(h) + ":" + std::to_string(per_host);
    }
    const std::vector<std::string> args = sweep(collective);
    std::vector<std::string> argv;
    if (program == "trainrun" || program == "flat" || program == "base" || program == "alt" || program == "gloo") {
      const std::string build = program == "base" ? o_.base : o_.build;
      argv = {build + "/trainrun", "-H",        trainrun_hosts, "-np", std::to_string(np),
              "--no-tag-output",   "--backend", "gloo"};
      for (const std::string& e : o_.trainrun_env) argv.insert(argv.end(), {"-x", e});
      if (program == "alt") {
        for (const std::string& e : o_.alt_env) argv.insert(argv.end(), {"-x", e});
      }
      if (program == "flat") argv.push_back("--no-shm");
      if (program == "gloo") {
        if (collective != "allreduce") return {};
        const std::string store = hosts_.dir() + "/gloo-store-" + std::to_string(++stores_);
        argv.insert(argv.end(), {build + "/tests/bench/gloo_allreduce_bench", "--store", store, "--iface", "eth0"});
        ::mkdir(store.c_str(), 0755);
      } else {
        argv.push_back(build + "/examples/allreduce_bench");
      }
    } else {
      argv = hosts_.mpirun_argv(np, mpi_hosts);
      argv.insert(argv.end(), {"--bind-to", "none"});
      if (program != "mpi") argv.insert(argv.end(), {"--mca", "mpi_yield_when_idle", "1"});
      if (program == "mpi-han") argv.insert(argv.end(), {"--mca", "coll_han_priority", "100"});
      if (program == "mpi-links2") argv.insert(argv.end(), {"--mca", "btl_tcp_links", "2"});
      argv.push_back(o_.build + "/tests/bench/mpi_allreduce_bench");
    }
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }

  const Options& o_;
  SshHosts& hosts_;
  mutable int stores_ = 0;
};

void print(const std::string& layout, const std::string& collective, int rounds, double wire,
           const std::vector<std::string>& programs, std::map<std::string, Table>& tables) {
  std::printf("\n## %s float32%s, %s (hosts x ranks), median of %d alternating rounds\n", collective.c_str(),
              collective == "allreduce" || collective == "reducescatter" ? " sum" : "", layout.c_str(), rounds);
  std::printf("# wire limit (busbw) %.4f GB/s. best-mpi: the lowest p50 / highest busbw of the mpi* columns\n", wire);
  std::printf("%10s", "bytes");
  for (const auto& p : programs) std::printf(" %11s", (p + " us").c_str());
  std::printf(" %9s\n", "tr/bestmpi");
  const Table& first = tables[programs.front()];
  for (const auto& [bytes, sample] : first) {
    std::printf("%10lld", bytes);
    double best = 1e300;
    for (const auto& p : programs) {
      const double v = median(tables[p][bytes].p50_us);
      std::printf(" %11.1f", v);
      if (p.rfind("mpi", 0) == 0 && v > 0) best = std::min(best, v);
    }
    std::printf(" %9.2f\n", best < 1e300 ? median(tables["trainrun"][bytes].p50_us) / best : 0.0);
  }
  std::printf("%10s", "bytes");
  for (const auto& p : programs) std::printf(" %11s", (p + " GB/s").c_str());
  std::printf(" %7s %7s %7s\n", "tr/wire", "tr/han", "tr/best");
  for (const auto& [bytes, sample] : first) {
    std::printf("%10lld", bytes);
    double best = 0;
    for (const auto& p : programs) {
      const double v = median(tables[p][bytes].busbw);
      std::printf(" %11.4f", v);
      if (p.rfind("mpi", 0) == 0) best = std::max(best, v);
    }
    const double tr = median(tables["trainrun"][bytes].busbw), han = median(tables["mpi-han"][bytes].busbw);
    std::printf(" %7.3f %7.3f %7.3f\n", tr / wire, han > 0 ? tr / han : 0.0, best > 0 ? tr / best : 0.0);
  }
  std::fflush(stdout);
}

bool parse(int argc, char** argv, Options& o) {
  if (argc < 2 || argv[1][0] == '-') return false;  // --help, or options before BUILD
  o.build = argv[1];
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return false;
    const std::string v = argv[++i];
    if (a == "--rounds") o.rounds = std::max(1, std::atoi(v.c_str()));
    else if (a == "--layouts") o.layouts = split(v, ',');
    else if (a == "--collectives") o.collectives = split(v, ',');
    else if (a == "--programs") o.programs = split(v, ',');
    else if (a == "--min-bytes") o.min_bytes = v;
    else if (a == "--max-bytes") o.max_bytes = v;
    else if (a == "--factor") o.factor = v;
    else if (a == "--budget") o.budget = v;
    else if (a == "--rate") o.rate = v;
    else if (a == "--burst") o.burst = v;
    else if (a == "--trainrun-env") o.trainrun_env.push_back(v);
    else if (a == "--alt-env") o.alt_env.push_back(v);
    else if (a == "--base") o.base = v;
    else return false;
  }
  return rate_gbs(o.rate) > 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, o)) {
    std::cerr << "usage: cross_host_bench BUILD [--rounds N] [--layouts 2x1,2x2,3x2] [--collectives LIST] "
                 "[--programs LIST] [--min-bytes B] [--max-bytes B] [--factor F] [--budget B] [--rate NNgbit|NNmbit] "
                 "[--burst 128kb] "
                 "[--trainrun-env NAME=VALUE]... [--alt-env NAME=VALUE]... [--base BUILD2]\n";
    return 2;
  }
  std::vector<std::string> programs;
  for (const auto& p : o.programs) {
    if (p == "trainrun") continue;
    programs.push_back(p);
  }
  programs.insert(programs.begin(), "trainrun");  // the ratios need it, first
  // As many hosts as the largest layout needs.
  int most_hosts = SshHosts::kHosts;
  for (const std::string& layout : o.layouts) {
    const int host_count = std::atoi(layout.c_str());
    const auto x = layout.find('x');
    if (host_count < 2 || host_count > SshHosts::kMaxHosts || x == std::string::npos ||
        std::atoi(layout.c_str() + x + 1) < 1) {
      std::cerr << "bad layout '" << layout << "' (HOSTSxRANKS, 2 to " << SshHosts::kMaxHosts << " hosts)\n";
      return 2;
    }
    most_hosts = std::max(most_hosts, host_count);
  }
  const std::unique_ptr<SshHosts> hosts = SshHosts::make_or_say_why(most_hosts);
  if (!hosts) return 77;
  Bench bench(o, *hosts);
  std::vector<std::string> usable;
  for (const auto& p : programs) {
    if (bench.available(p)) usable.push_back(p);
  }
  bench.shape(hosts->count());
  std::printf("# cross_host_bench: every host's link shaped to %s each way (tc tbf burst %s latency 10ms)\n",
              o.rate.c_str(), o.burst.c_str());
  int failures = 0;
  for (const std::string& layout : o.layouts) {
    const int host_count = std::atoi(layout.c_str());
    const int per_host = std::atoi(layout.c_str() + layout.find('x') + 1);
    const int n = host_count * per_host;
    for (const std::string& collective : o.collectives) {
      const double r = rate_gbs(o.rate);
      const double wire = collective == "broadcast" ? r : r * host_count / (host_count - 1.0) * (n - 1.0) / n;
      std::map<std::string, Table> tables;
      std::vector<std::string> ran;
      for (const auto& p : usable) {
        if (p != "gloo" || collective == "allreduce") ran.push_back(p);
      }
      for (int round = 0; round < o.rounds; ++round) {
        for (const auto& p : ran) failures += !bench.run(p, host_count, per_host, collective, tables[p]);
      }
      print(layout, collective, o.rounds, wire, ran, tables);
    }
  }
  return failures ? 1 : 0;
}
