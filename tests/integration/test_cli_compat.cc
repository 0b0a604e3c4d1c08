// The launcher's command line as users of mpirun, horovodrun and torchrun
// type it, through the real trainrun binary: no option but -h/--help ever
// prints the help (exit 0); an unknown option is exit 2 with one line and,
// where one is near, "did you mean"; every compatibility spelling gives
// the same plan and rank environment (--dry-run) as trainrun's own.
#include <doctest/doctest.h>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "tests/integration/trainrun_runner.h"

using namespace trainrun::test;

namespace {

// The names in a directory.
std::set<std::string> entries(const std::string& path) {
  std::set<std::string> names;
  if (DIR* d = ::opendir(path.c_str())) {
    while (const dirent* e = ::readdir(d)) names.insert(e->d_name);
    ::closedir(d);
  }
  return names;
}

bool is_help(const ProcessResult& r) {
  return contains(r.out, "Usage: trainrun") || contains(r.err, "Usage: trainrun");
}

// Every long option name --help lists ("--np", "--hostfile", ...).
std::set<std::string> long_options() {
  const ProcessResult help = run_trainrun({"--help"});
  REQUIRE(help.exit_code == 0);
  std::set<std::string> names;
  const std::regex option(R"((^|[ ,])--([a-z][a-z0-9-]+))");
  for (std::sregex_iterator it(help.out.begin(), help.out.end(), option), end; it != end; ++it) {
    names.insert((*it)[2]);
  }
  REQUIRE(names.count("hostfile"));
  return names;
}

// trainrun ARGS: exit 2, one line on stderr, nothing on stdout, no help.
void check_one_line_error(const std::vector<std::string>& args, const std::string& expected) {
  CAPTURE(args);
  std::string tag;
  const ProcessResult r = run_trainrun(args, &tag);
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(count(r.err, "\n") == 1);
  CHECK(r.err == "trainrun: error: " + expected + "\n");
  CHECK(nothing_left(tag));
}

}  // namespace

TEST_CASE("mpirun's single-dash long options are options, never the help") {
  // Was: "-hostfile" read as "-h ostfile": the whole help, exit 0.
  const ProcessResult hostfile = run_trainrun({"-np", "2", "-hostfile", "/nonexistent/hosts", "true"});
  CHECK(hostfile.exit_code == 2);
  CHECK_FALSE(is_help(hostfile));
  CHECK(hostfile.err == "trainrun: error: --hostfile /nonexistent/hosts: No such file or directory\n");
  const ProcessResult hosts = run_trainrun({"-np", "2", "-hosts", "localhost:2", "--dry-run", "true"});
  CHECK(hosts.exit_code == 0);
  CHECK_FALSE(is_help(hosts));
  CHECK(contains(hosts.out, "2 rank(s) on 1 host(s)"));
}

TEST_CASE("unknown options: exit 2, one line naming the token, did you mean") {
  check_one_line_error({"-np", "2", "-hostfle", "h", "true"},
                       "unknown option '-hostfle'; did you mean --hostfile? (trainrun --help lists every option)");
  check_one_line_error(
      {"--tag-outptu", "-np", "2", "true"},
      "unknown option '--tag-outptu'; did you mean --tag-output? (trainrun --help lists every option)");
  check_one_line_error({"-np", "2", "--qqqqqqqq", "true"},
                       "unknown option '--qqqqqqqq' (trainrun --help lists every option)");
  check_one_line_error({"-hx", "-np", "1", "true"}, "unknown option '-hx' (trainrun --help lists every option)");
  check_one_line_error({"-ho", "-np", "1", "true"}, "unknown option '-ho' (trainrun --help lists every option)");
}

TEST_CASE("nothing but -h and --help prints the help and exits 0") {
  for (const char* help : {"-h", "--help"}) {
    const ProcessResult r = run_trainrun({help});
    CHECK(r.exit_code == 0);
    CHECK(is_help(r));
  }
  // Every option with one dash and two, with and without a value, and
  // tokens starting with h: none of them is the help.
  std::vector<std::vector<std::string>> cases = {{"-hostfile"}, {"-host"}, {"-help"},    {"-hel"}, {"--hel"},
                                                 {"-hh"},       {"-H"},    {"--help=1"}, {"-h=1"}};
  // A value that is a path in a fresh directory: --report and the like
  // write there, never into the test's working directory.
  char dir[] = "/tmp/trainrun-help-XXXXXX";
  REQUIRE(::mkdtemp(dir));
  const std::string value = std::string(dir) + "/value";
  for (const std::string& name : long_options()) {
    if (name == "help") continue;
    cases.push_back({"-" + name});
    cases.push_back({"--" + name});
    cases.push_back({"-" + name, value});
    cases.push_back({"-" + name + "x"});
  }
  // An option given without its value takes the next word: --output-filename
  // makes "--dry-run" a directory and the job runs. Each case runs in the
  // fresh directory, so nothing lands where the test was started (once the
  // source tree: a committed "--dry-run/rank.00").
  ProcessOptions in_dir;
  in_dir.cwd = dir;
  const std::set<std::string> before = entries(".");
  for (std::vector<std::string> args : cases) {
    CAPTURE(args);
    args.insert(args.end(), {"--dry-run", "-np", "1", "true"});
    const ProcessResult r = run_trainrun(args, nullptr, in_dir);
    CHECK_FALSE(is_help(r));
    // A usage error: one line (after the note of an option accepted for compatibility).
    if (r.exit_code == 2) CHECK(count(r.err, "\n") - count(r.err, "trainrun: note: ") == 1);
  }
  CHECK(entries(".") == before);
  CHECK(std::system(("rm -rf " + std::string(dir)).c_str()) == 0);
}

TEST_CASE("the program's own options are never touched") {
  const ProcessResult r = run_trainrun({"-np", "1", "--dry-run", "true", "-hostfile", "x", "-h", "--help"});
  CHECK(r.exit_code == 0);
  CHECK(contains(r.out, " true -hostfile x -h --help\n"));
}

namespace {

// trainrun --dry-run ARGS -np-less true: its stdout (the plan and each
// rank's environment), after checking it succeeded.
std::string dry_run(std::vector<std::string> args, std::string* err = nullptr) {
  CAPTURE(args);
  args.insert(args.end(), {"--dry-run", "true"});
  const ProcessResult r = run_trainrun(args);
  CHECK(r.exit_code == 0);
  CHECK_FALSE(is_help(r));
  if (err) *err = r.err;
  return r.out;
}

// The sockets of the CPUs this test may use, as trainrun counts them for
// --map-by ppr:N:socket (the physical package of each CPU in its affinity mask).
int sockets_here() {
  cpu_set_t set;
  CPU_ZERO(&set);
  REQUIRE(::sched_getaffinity(0, sizeof set, &set) == 0);
  std::set<std::string> packages;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set)) continue;
    std::ifstream in("/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/physical_package_id");
    std::string id = "0";
    in >> id;
    packages.insert(id);
  }
  return static_cast<int>(packages.size());
}

struct Spelling {
  std::vector<std::string> alias;  // mpirun's or horovodrun's
  std::vector<std::string> own;    // trainrun's
  std::string shows;               // in the dry run of both
};

}  // namespace

TEST_CASE("every compatibility spelling plans exactly what trainrun's own spelling plans") {
  char dir[] = "/tmp/trainrun-compat-XXXXXX";
  REQUIRE(::mkdtemp(dir));
  const std::string hostfile = std::string(dir) + "/hosts";
  const std::string hostfile_without_slots = std::string(dir) + "/bare";
  for (const auto& [path, text] :
       {std::pair{hostfile, "localhost slots=2\n"}, {hostfile_without_slots, "localhost\n"}}) {
    FILE* f = std::fopen(path.c_str(), "w");
    std::fputs(text, f);
    std::fclose(f);
  }
  const std::vector<std::string> np2 = {"-np", "2"};
  auto with = [](std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  const std::vector<Spelling> table = {
      {{"-n", "2"}, {"--np", "2"}, "2 rank(s) on 1 host(s)"},
      {{"-np", "2"}, {"--np", "2"}, "2 rank(s) on 1 host(s)"},
      {{"-np=2"}, {"--np=2"}, "2 rank(s) on 1 host(s)"},
      {{"--num-proc", "2"}, {"--np", "2"}, "2 rank(s) on 1 host(s)"},
      {{"-num-proc", "2"}, {"--np", "2"}, "2 rank(s) on 1 host(s)"},
      {{"--host", "localhost:2"}, {"-H", "localhost:2"}, "  1  localhost"},
      {{"-host", "localhost:2"}, {"--hosts", "localhost:2"}, "  1  localhost"},
      {{"-H", "localhost:2"}, {"--hosts=localhost:2"}, "  1  localhost"},
      {{"--machinefile", hostfile}, {"--hostfile", hostfile}, "  1  localhost"},
      {{"-machinefile", hostfile}, {"--hostfile", hostfile}, "  1  localhost"},
      {{"-hostfile", hostfile}, {"--hostfile", hostfile}, "  1  localhost"},
      {{"--oversubscribe", "-H", "localhost:1", "-np", "3"}, {"-H", "localhost:3", "-np", "3"}, "  2  localhost"},
      // mpirun's ranks per host: N on each host (or here), -np may fill fewer
      {{"-npernode", "2"}, {"--np", "2"}, "2 rank(s) on 1 host(s)"},
      {{"-npernode", "2", "-H", "localhost,127.0.0.1"}, {"-H", "localhost:2,127.0.0.1:2"}, "4 rank(s) on 2 host(s)"},
      {{"--npernode", "2", "-H", "localhost:5,127.0.0.1"}, {"-H", "localhost:2,127.0.0.1:2"}, "4 rank(s) on 2 host(s)"},
      {{"-N", "2", "-H", "localhost,127.0.0.1"}, {"-H", "localhost:2,127.0.0.1:2"}, "4 rank(s) on 2 host(s)"},
      {{"-N2", "--hostfile", hostfile_without_slots}, {"-H", "localhost:2"}, "2 rank(s) on 1 host(s)"},
      {{"--map-by", "ppr:2:node", "-H", "localhost,127.0.0.1"}, {"-H", "localhost:2,127.0.0.1:2"}, "  3  127.0.0.1"},
      {{"-map-by", "ppr:2:node", "-np", "2"}, {"-np", "2"}, "2 rank(s) on 1 host(s)"},
      {{"--pernode", "-H", "localhost:4,127.0.0.1:4"}, {"-H", "localhost:1,127.0.0.1:1"}, "2 rank(s) on 2 host(s)"},
      {{"-pernode", "-H", "localhost,127.0.0.1"}, {"-H", "localhost,127.0.0.1"}, "2 rank(s) on 2 host(s)"},
      {{"-np", "3", "-npernode", "2", "-H", "localhost,127.0.0.1"},
       {"-np", "3", "-H", "localhost:2,127.0.0.1:2"},
       "  2  127.0.0.1          0/1    1/2 "},
      {{"-npernode", "2", "--nproc-per-node", "2"}, {"-np", "2"}, "2 rank(s) on 1 host(s)"},
      {with({"--display-map"}, np2), np2, "2 rank(s) on 1 host(s)"},  // --dry-run shows the map already
      // mpirun's working directory of the ranks
      {with({"-wdir", "/tmp"}, np2), with({"--wd", "/tmp"}, np2), "cd /tmp && "},
      {with({"--wdir", "/"}, np2), with({"-wd", "/"}, np2), "cd / && "},
      // mpirun's --map-by core, hwthread, socket, numa: slot, each rank bound (--bind-to overrides)
      {with({"--map-by", "core"}, np2), with({"--bind-to", "core"}, np2), "TRAINRUN_BIND_TO=core "},
      {with({"-map-by", "hwthread"}, np2), with({"--bind-to", "hwthread"}, np2), "TRAINRUN_BIND_TO=hwthread "},
      {with({"--map-by", "socket"}, np2), with({"--bind-to", "socket"}, np2), "TRAINRUN_BIND_TO=socket "},
      {with({"--map-by", "numa"}, np2), with({"--bind-to", "numa"}, np2), "TRAINRUN_BIND_TO=numa "},
      {with({"--map-by", "core", "--bind-to", "none"}, np2), np2, "2 rank(s) on 1 host(s)"},
      {with({"--bind-to", "socket", "--map-by", "core"}, np2), with({"--bind-to", "socket"}, np2),
       "TRAINRUN_BIND_TO=socket "},
      {{"--map-by", "core", "-H", "localhost:2,127.0.0.1:2"},
       {"--bind-to", "core", "-H", "localhost:2,127.0.0.1:2"},
       "  2  127.0.0.1"},
      // ppr:N:socket: N ranks on each socket of this machine, bound to it
      {{"--map-by", "ppr:1:socket"},
       {"-np", std::to_string(sockets_here()), "--bind-to", "socket"},
       "TRAINRUN_BIND_TO=socket "},
      {{"--map-by", "ppr:2:socket", "-np", "1"}, {"-np", "1", "--bind-to", "socket"}, "1 rank(s) on 1 host(s)"},
      {with({"--gloo"}, np2), with({"--backend", "gloo"}, np2), "TRAINRUN_BACKEND=tcp"},
      {with({"--timeline-filename", "/tmp/t.json"}, np2), with({"--timeline", "/tmp/t.json"}, np2),
       "TRAINRUN_TIMELINE=/tmp/t.json"},
      {with({"--stall-check-warning-time-seconds", "7"}, np2), with({"--stall-warning", "7"}, np2),
       "TRAINRUN_STALL_WARNING=7 "},
      {with({"--stall-check-shutdown-time-seconds", "9"}, np2), with({"--stall-shutdown", "9"}, np2),
       "TRAINRUN_STALL_SHUTDOWN=9 "},
      {with({"--no-stall-check"}, np2), with({"--stall-warning", "0", "--stall-shutdown", "0"}, np2),
       "TRAINRUN_STALL_WARNING=0 TRAINRUN_STALL_SHUTDOWN=0 "},
      {with({"--network-interfaces", "lo"}, np2), with({"--network-interface", "lo"}, np2), "TRAINRUN_IFACE=lo"},
      {with({"--fusion-threshold-mb", "32"}, np2), with({"-fusion-threshold-mb", "32"}, np2),
       "TRAINRUN_FUSION_THRESHOLD=33554432"},
      {with({"--cycle-time-ms", "2.5"}, np2), with({"-cycle-time-ms=2.5"}, np2), "TRAINRUN_CYCLE_TIME_MS=2.5"},
      {with({"--cache-capacity", "10"}, np2), with({"-cache-capacity", "10"}, np2), "TRAINRUN_CACHE_CAPACITY=10"},
      {with({"--log-level", "debug"}, np2), with({"--verbose"}, np2), "2 rank(s)"},
      {with({"--tag-output"}, np2), np2, "2 rank(s)"},
      {with({"-tag-output"}, np2), np2, "2 rank(s)"},
      // torchrun's
      {{"--nproc-per-node", "2"}, {"--np", "2"}, "2 rank(s) on 1 host(s)"},
      {{"--nproc_per_node", "2"}, {"-np", "2"}, "2 rank(s) on 1 host(s)"},
      {{"--nproc-per-node", "2", "-H", "localhost,127.0.0.1"},
       {"-H", "localhost:2,127.0.0.1:2"},
       "GROUP_RANK=1 GROUP_WORLD_SIZE=2 ROLE_RANK=3 ROLE_WORLD_SIZE=4 "},
      {{"--nnodes", "2", "-H", "localhost:1,127.0.0.1:1"}, {"-H", "localhost:1,127.0.0.1:1"}, "2 rank(s) on 2 host(s)"},
      {{"--nnodes", "1", "--nproc_per_node", "2"}, {"-np", "2"}, "OMP_NUM_THREADS=1 "},
      {{"--standalone", "-np", "2"}, {"--local", "-np", "2"}, "TORCHELASTIC_RESTART_COUNT=0 "},
      {with({"--max-restarts", "2"}, np2), with({"--reset-limit", "2"}, np2), "TORCHELASTIC_MAX_RESTARTS=2 "},
      {with({"--max_restarts", "2"}, np2), with({"--reset-limit", "2"}, np2), "TORCHELASTIC_MAX_RESTARTS=2 "},
      {with({"--role", "trainer"}, np2), with({"-x", "ROLE_NAME=trainer"}, np2), "ROLE_NAME=trainer "},
      {with({"--local_ranks_filter", "1"}, np2), with({"--rank-filter", "1"}, np2), "2 rank(s)"},
      {with({"--numa-binding", "node"}, np2), with({"--bind-to", "numa"}, np2), "TRAINRUN_BIND_TO=numa "},
      {with({"--log-dir", dir}, np2), with({"--output-filename", dir}, np2), "2 rank(s)"},
      // horovodrun's remaining flags
      {with({"--gloo-timeout-seconds", "45"}, np2), with({"-x", "TRAINRUN_COLLECTIVE_TIMEOUT=45"}, np2),
       "TRAINRUN_COLLECTIVE_TIMEOUT=45 "},
      {with({"--no-mpi-threads-disable"}, np2), with({"-x", "TRAINRUN_MPI_THREADS=multiple"}, np2),
       "TRAINRUN_MPI_THREADS=multiple "},
      {{"-H", "localhost,127.0.0.1", "--slots-per-host", "2"},
       {"-H", "localhost:2,127.0.0.1:2"},
       "4 rank(s) on 2 host(s)"},
      {{"--hostfile", hostfile_without_slots, "--slots-per-host", "3"},
       {"-H", "localhost:3"},
       "3 rank(s) on 1 host(s)"},
      {with({"--min-num-proc", "1", "--max-num-proc", "3"}, np2), with({"--min-np", "1", "--max-np", "3"}, np2),
       "2 rank(s)"},
      {with({"--mpi", "--binding-args", "--bind-to core"}, np2), with({"--mpi", "--mpi-args", "--bind-to core"}, np2),
       "--bind-to core true"},
  };
  for (const Spelling& s : table) {
    CAPTURE(s.alias);
    const std::string alias = dry_run(s.alias);
    CHECK(alias == dry_run(s.own));
    CHECK(contains(alias, s.shows));
  }
  ::unlink(hostfile.c_str());
  ::unlink(hostfile_without_slots.c_str());
  ::rmdir(dir);
}

TEST_CASE("options accepted for compatibility say in one line what trainrun does instead") {
  const std::string plain = dry_run({"-np", "2"});
  const std::vector<std::vector<std::string>> noted = {
      {"--hierarchical-allreduce"},
      {"--hierarchical-allgather"},
      {"--disable-cache"},
      {"--autotune"},
      {"--autotune-log-file", "tune.csv"},
      {"--autotune-warmup-samples", "3"},
      {"--autotune-steps-per-sample", "10"},
      {"--autotune-bayes-opt-max-samples", "20"},
      {"--autotune-gaussian-process-noise", "0.8"},
      {"--torus-allreduce"},
      {"--no-hierarchical-allreduce"},
      {"--tcp"},
      {"--binding-args", "--bind-to core"},
      {"--thread-affinity", "1"},
      {"--num-nccl-streams", "2"},
      {"--blacklist-cooldown-range", "60", "300"},
      {"--allow-run-as-root"},
      {"--monitor-interval", "5"},
      {"--start-method", "spawn"},
      {"--event-log-handler", "null"},
      {"--signals-to-handle", "SIGTERM,SIGUSR1"},
      {"--tee", "3"},
      {"--redirects", "0:1,1:3"},
  };
  for (std::vector<std::string> args : noted) {
    CAPTURE(args);
    const std::string option = args[0];
    args.insert(args.end(), {"-np", "2"});
    std::string err;
    CHECK(dry_run(args, &err) == plain);  // the values are consumed, the program ("true") is intact
    CHECK(err.rfind("trainrun: note: " + option + ": ", 0) == 0);
    CHECK(count(err, "\n") == 1);
  }
  // Flags that name trainrun's default: the same plan, not a word.
  for (const char* option : {"--stall-check", "--log-without-timestamp", "--log-hide-timestamp", "--no-autotune",
                             "--no-torus-allreduce", "--no-hierarchical-allgather", "--mpi-threads-disable",
                             "--no-timeline-mark-cycles", "--no-python", "--no_python"}) {
    CAPTURE(option);
    std::string err;
    CHECK(dry_run({option, "-np", "2"}, &err) == plain);
    CHECK(err.empty());
  }
  // horovodrun's --timeline-mark-cycles is trainrun's too now: CYCLE_START marks.
  std::string err;
  CHECK(contains(dry_run({"--timeline-mark-cycles", "--timeline", "/tmp/t.json", "-np", "2"}, &err),
                 "TRAINRUN_TIMELINE_MARK_CYCLES=1 TRAINRUN_RANK=0 "));
  CHECK(err.empty());
  check_one_line_error({"--jsrun", "-np", "2", "true"},
                       "--jsrun: LSF's jsrun is not supported; trainrun starts ranks over SSH (-H), in Slurm (srun) "
                       "or with Open MPI (--launcher mpirun) (see trainrun --help)");
  check_one_line_error({"--blacklist-cooldown-range", "300", "60", "-np", "2", "true"},
                       "--blacklist-cooldown-range: needs MIN MAX seconds with 0 <= MIN <= MAX (see trainrun --help)");
  check_one_line_error({"--network-interfaces", "lo,eth0", "-np", "2", "true"},
                       "--network-interfaces: trainrun uses one interface on every host; give one name (see trainrun "
                       "--help)");
  check_one_line_error({"-H", "localhost:1", "-np", "2", "true"},
                       "-np 2 exceeds the 1 slot(s) of localhost:1 (--oversubscribe allows it)");
  for (const char* cb : {"-cb", "--cb"}) {
    const ProcessResult r = run_trainrun({cb});
    CHECK(r.exit_code == 0);
    CHECK(r.out == run_trainrun({"--check-build"}).out);
  }
}

TEST_CASE("mpirun's container command line runs: --allow-run-as-root is a note, the job runs") {
  const std::string note =
      "trainrun: note: --allow-run-as-root: trainrun runs as root without it (under --launcher mpirun it gives "
      "mpirun the flag itself); no effect\n";
  for (const char* spelling : {"--allow-run-as-root", "-allow-run-as-root"}) {
    CAPTURE(spelling);
    std::string tag;
    const ProcessResult r = run_trainrun({spelling, "-np", "2", "sh", "-c", "echo rank $TRAINRUN_RANK"}, &tag);
    CHECK(r.exit_code == 0);
    CHECK(r.err == note);
    CHECK(count(r.out, "\n") == 2);
    CHECK(contains(r.out, "[0] rank 0\n"));
    CHECK(contains(r.out, "[1] rank 1\n"));
    CHECK(nothing_left(tag));
  }
}

TEST_CASE("mpirun's ranks per host: -npernode, -N, --pernode, --map-by ppr:N:node and ppr:N:socket") {
  // A real job: two ranks on each of two "hosts" (both this machine).
  std::string tag;
  const ProcessResult r =
      run_trainrun({"-npernode", "2", "-H", "localhost,127.0.0.1", "sh", "-c",
                    "echo rank $TRAINRUN_RANK of $TRAINRUN_SIZE on $TRAINRUN_HOSTNAME as $TRAINRUN_LOCAL_RANK"},
                   &tag);
  CHECK(r.exit_code == 0);
  CHECK(r.err == "");
  CHECK(count(r.out, "\n") == 4);
  for (const char* line : {"[0] rank 0 of 4 on localhost as 0\n", "[1] rank 1 of 4 on localhost as 1\n",
                           "[2] rank 2 of 4 on 127.0.0.1 as 0\n", "[3] rank 3 of 4 on 127.0.0.1 as 1\n"}) {
    CHECK(contains(r.out, line));
  }
  CHECK(nothing_left(tag));
  // Each spelling's errors: one line naming the values.
  const std::vector<std::pair<std::vector<std::string>, std::string>> errors = {
      {{"-np", "5", "-npernode", "2", "-H", "localhost,127.0.0.1"},
       "-np 5 exceeds -npernode 2 x 2 host(s) = 4 rank(s)"},
      {{"-np", "4", "-N", "2"}, "-np 4 exceeds -N 2 x 1 host(s) = 2 rank(s)"},
      {{"--map-by", "ppr:1:node", "-np", "2"}, "-np 2 exceeds --map-by ppr:1:node x 1 host(s) = 1 rank(s)"},
      {{"--pernode", "-np", "3", "-H", "localhost,127.0.0.1"}, "-np 3 exceeds --pernode x 2 host(s) = 2 rank(s)"},
      {{"-N", "2", "-npernode", "3"}, "-N 2 conflicts with -npernode 3 (see trainrun --help)"},
      {{"-npernode", "2", "--map-by", "ppr:3:node"},
       "-npernode 2 conflicts with --map-by ppr:3:node (see trainrun --help)"},
      {{"-N", "2", "--nproc-per-node", "3"}, "-N 2 does not match --nproc-per-node 3"},
      {{"-npernode", "pernode"},
       "--npernode: 'pernode' is not a number of ranks: give a whole number from 1 to 1048576 (see trainrun --help)"},
      {{"-N", "0"}, "-N: '0' is not a number of ranks: give a whole number from 1 to 1048576 (see trainrun --help)"},
      {{"--map-by", "ppr:0:node"},
       "--map-by: 'ppr:0:node' is not slot, node, core, hwthread, socket, numa, ppr:N:node or ppr:N:socket (see "
       "trainrun --help)"},
      {{"--map-by", "ppr:2:board"},
       "--map-by: 'ppr:2:board' is not slot, node, core, hwthread, socket, numa, ppr:N:node or ppr:N:socket (see "
       "trainrun --help)"},
      {{"--map-by", "bogus"},
       "--map-by: 'bogus' is not slot, node, core, hwthread, socket, numa, ppr:N:node or ppr:N:socket (see "
       "trainrun --help)"},
      {{"--map-by", "ppr:1:socket", "-H", "localhost"},
       "--map-by ppr:1:socket counts this machine's sockets, so every rank must run here; for other hosts give "
       "the ranks per host and the binding: -npernode N --bind-to socket"},
      {{"--map-by", "ppr:1:socket", "-np", std::to_string(sockets_here() + 1)},
       "-np " + std::to_string(sockets_here() + 1) + " exceeds --map-by ppr:1:socket (" +
           std::to_string(sockets_here()) + " socket(s) here) x 1 host(s) = " + std::to_string(sockets_here()) +
           " rank(s)"},
      {{"--map-by", "ppr:1:socket", "-N", "1"}, "-N 1 conflicts with --map-by ppr:1:socket (see trainrun --help)"},
      {{"--map-by", "core:PE=2"},
       "--map-by: 'core:PE=2' is not slot, node, core, hwthread, socket, numa, ppr:N:node or ppr:N:socket (see "
       "trainrun --help)"},
      {{"--min-np", "1", "-np", "2", "-npernode", "2"},
       "-npernode 2 cannot be used in an elastic job (--min-np, --max-np, --host-discovery-script): elastic jobs fill "
       "each host's slots in order"},
      {{"--min-np", "1", "-np", "2", "--tree-radix", "8"},
       "--tree-radix cannot be used in an elastic job (--min-np, --max-np, --host-discovery-script): an elastic job "
       "reaches every host itself"},
      {{"--tree-radix", "0", "-np", "2"}, "--tree-radix: Value 0 not in range 1 to 65536 (see trainrun --help)"},
  };
  for (auto [args, message] : errors) {
    args.push_back("true");
    check_one_line_error(args, message);
  }
}

TEST_CASE("mpirun's -wdir: the ranks start there, and a relative program is found there") {
  char dir[] = "/tmp/trainrun-wdir-XXXXXX";
  REQUIRE(::mkdtemp(dir));
  const std::string sub = std::string(dir) + "/sub";
  REQUIRE(::mkdir(sub.c_str(), 0700) == 0);
  {
    std::ofstream script(sub + "/where.sh");
    script << "#!/bin/sh\necho rank $TRAINRUN_RANK in $(pwd)\n";
  }
  REQUIRE(::chmod((sub + "/where.sh").c_str(), 0700) == 0);
  ProcessOptions in_dir;
  in_dir.cwd = dir;
  for (const char* spelling : {"-wdir", "--wdir", "-wd", "--wd"}) {
    CAPTURE(spelling);
    std::string tag;
    const ProcessResult r =
        run_trainrun({spelling, "sub", "-np", "2", "-x", "OMP_NUM_THREADS=1", "./where.sh"}, &tag, in_dir);
    CHECK(r.exit_code == 0);
    CHECK(r.err.empty());
    CHECK(count(r.out, "\n") == 2);
    CHECK(contains(r.out, "[0] rank 0 in " + sub + "\n"));
    CHECK(contains(r.out, "[1] rank 1 in " + sub + "\n"));
    CHECK(nothing_left(tag));
  }
  // Under --launcher mpirun, mpirun gets it, absolute.
  const ProcessResult mpi =
      run_trainrun({"--mpi", "-wdir", "sub", "-np", "1", "--dry-run", "./where.sh"}, nullptr, in_dir);
  CHECK(mpi.exit_code == 0);
  CHECK(contains(mpi.out, " --wdir " + sub + " "));
  check_one_line_error({"-wdir", "/nonexistent/dir", "-np", "1", "true"}, "-wdir /nonexistent/dir: no such directory");
  check_one_line_error({"-wdir", sub + "/where.sh", "-np", "1", "true"}, "-wdir " + sub + "/where.sh: not a directory");
  check_one_line_error({"-wdir", "", "-np", "1", "true"}, "-wdir: empty directory name");
  // A relative program is looked for in -wdir, not where trainrun runs.
  const ProcessResult missing = run_trainrun({"-wdir", dir, "-np", "1", "./where.sh"}, nullptr, in_dir);
  CHECK(missing.exit_code == 127);
  CHECK(missing.err == "trainrun: error: no such file: " + std::string(dir) + "/./where.sh\n");
  CHECK(std::system(("rm -rf " + std::string(dir)).c_str()) == 0);
}

TEST_CASE("mpirun's --display-map: the rank map on stderr, then the job") {
  for (const char* spelling : {"--display-map", "-display-map"}) {
    CAPTURE(spelling);
    std::string tag;
    const ProcessResult r = run_trainrun({spelling, "-npernode", "2", "-np", "3", "-H", "localhost,127.0.0.1", "-x",
                                          "OMP_NUM_THREADS=1", "sh", "-c", "echo rank $TRAINRUN_RANK"},
                                         &tag);
    CHECK(r.exit_code == 0);
    CHECK(r.err ==
          "trainrun: rank map: 3 rank(s) on 2 host(s)\n"
          "rank  host              local  cross\n"
          "   0  localhost          0/2    0/2\n"
          "   1  localhost          1/2    0/1\n"
          "   2  127.0.0.1          0/1    1/2\n");
    CHECK(count(r.out, "\n") == 3);
    CHECK(contains(r.out, "[2] rank 2\n"));
    CHECK(nothing_left(tag));
  }
}

TEST_CASE("mpirun's --merge-stderr-to-stdout: each rank's stderr goes with its stdout") {
  char dir[] = "/tmp/trainrun-merge-XXXXXX";
  REQUIRE(::mkdtemp(dir));
  const std::string files = std::string(dir) + "/out";
  // The pauses order the two streams, as 2>&1 would.
  const std::vector<std::string> program = {"sh", "-c", "echo out; sleep 0.2; echo err >&2; sleep 0.2; echo end"};
  for (const char* spelling : {"--merge-stderr-to-stdout", "-merge-stderr-to-stdout"}) {
    CAPTURE(spelling);
    std::vector<std::string> args = {spelling, "--output-filename", files, "-np", "1"};
    args.insert(args.end(), program.begin(), program.end());
    std::string tag;
    const ProcessResult r = run_trainrun(args, &tag);
    CHECK(r.exit_code == 0);
    CHECK(r.out == "[0] out\n[0] err\n[0] end\n");
    CHECK(r.err.empty());
    std::ifstream out(files + "/rank.00/stdout"), err(files + "/rank.00/stderr");
    CHECK(std::string(std::istreambuf_iterator<char>(out), {}) == "out\nerr\nend\n");
    CHECK(std::string(std::istreambuf_iterator<char>(err), {}).empty());
    CHECK(nothing_left(tag));
  }
  // Without it, stderr stays stderr.
  std::vector<std::string> args = {"-np", "1"};
  args.insert(args.end(), program.begin(), program.end());
  const ProcessResult plain = run_trainrun(args);
  CHECK(plain.out == "[0] out\n[0] end\n");
  CHECK(plain.err == "[0] err\n");
  CHECK(std::system(("rm -rf " + std::string(dir)).c_str()) == 0);
}

TEST_CASE("mpirun's --mca NAME VALUE: to mpirun under --launcher mpirun, else one note") {
  const std::string plain = dry_run({"-np", "2"});
  const std::string note =
      "trainrun: note: --mca btl tcp,self: Open MPI's parameters go to mpirun under --launcher mpirun; trainrun's "
      "own launcher starts no mpirun, so no effect (-x OMPI_MCA_NAME=VALUE gives one to ranks that use Open MPI)\n";
  for (const char* spelling : {"-mca", "--mca", "-gmca", "--gmca"}) {
    CAPTURE(spelling);
    std::string err;
    CHECK(dry_run({spelling, "btl", "tcp,self", "-np", "2"}, &err) == plain);  // both values taken, "true" intact
    CHECK(err == note);
    // Under --launcher mpirun: mpirun's own, in order, a value with commas or blanks intact.
    CHECK(contains(dry_run({"--mpi", "-np", "1", spelling, "btl", "tcp,self", "--mca", "plm_rsh_args", "-p 2222"}),
                   " --mca btl tcp,self --mca plm_rsh_args '-p 2222' true\n"));
  }
  std::string err;
  dry_run({"-mca", "btl", "tcp,self", "--mca", "x", "a b", "-np", "1"}, &err);
  CHECK(err ==
        "trainrun: note: --mca btl tcp,self --mca x 'a b': Open MPI's parameters go to mpirun under --launcher "
        "mpirun; trainrun's own launcher starts no mpirun, so no effect (-x OMPI_MCA_NAME=VALUE gives one to "
        "ranks that use Open MPI)\n");
  // A real job: the program and its arguments are the program's.
  std::string tag;
  const ProcessResult r = run_trainrun({"-mca", "btl", "tcp,self", "-np", "1", "echo", "ran", "-mca"}, &tag);
  CHECK(r.exit_code == 0);
  CHECK(r.out == "[0] ran -mca\n");
  CHECK(r.err == note);
  CHECK(nothing_left(tag));
  check_one_line_error({"--mca=btl", "-np", "1", "true"}, "--mca btl: no value (--mca NAME VALUE)");
  check_one_line_error({"-np", "1", "-mca", "btl"}, "--mca btl: no value (--mca NAME VALUE)");
}

TEST_CASE("--timestamp-output and --prefix-output-with-timestamp stamp each console line") {
  const std::regex stamped(R"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} \[[01]\] hi\n)");
  for (const char* option : {"--timestamp-output", "--prefix-output-with-timestamp", "-timestamp-output",
                             "--log-with-timestamp", "--no-log-hide-timestamp"}) {
    CAPTURE(option);
    std::string tag;
    const ProcessResult r = run_trainrun({option, "-np", "2", "sh", "-c", "echo hi"}, &tag);
    CHECK(r.exit_code == 0);
    CHECK(count(r.out, "\n") == 2);
    CHECK(std::regex_search(r.out, stamped));
    CHECK(std::regex_replace(r.out, stamped, "") == "");
    CHECK(nothing_left(tag));
  }
}

namespace {

// How many CPUs this test may use (its affinity mask).
int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  return ::sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
}

// Each rank's "Cpus_allowed_list" as the rank itself reads it from /proc/PID/status.
std::map<int, std::string> allowed_lists(const std::string& out) {
  std::map<int, std::string> lists;
  const std::regex line(R"(\[(\d+)\] Cpus_allowed_list:\s*(\S+)\n)");
  for (std::sregex_iterator it(out.begin(), out.end(), line), end; it != end; ++it) {
    lists[std::stoi((*it)[1])] = (*it)[2];
  }
  return lists;
}

const std::vector<std::string> kPrintAllowed = {"sh", "-c", "grep Cpus_allowed_list /proc/$$/status"};

}  // namespace

TEST_CASE("horovodrun's settings reach the ranks, and a flag's value is never the program") {
  std::string tag;
  const ProcessResult r =
      run_trainrun({"--gloo-timeout-seconds", "45", "--no-mpi-threads-disable", "--thread-affinity", "1", "-np", "2",
                    "sh", "-c", "echo $TRAINRUN_COLLECTIVE_TIMEOUT $TRAINRUN_MPI_THREADS"},
                   &tag);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.out, "[0] 45 multiple\n"));
  CHECK(contains(r.out, "[1] 45 multiple\n"));
  CHECK(contains(r.err, "trainrun: note: --thread-affinity: "));
  CHECK(nothing_left(tag));
  const ProcessResult range =
      run_trainrun({"--blacklist-cooldown-range", "1", "2", "-np", "1", "echo", "ran", "3"}, &tag);
  CHECK(range.exit_code == 0);
  CHECK(range.out == "[0] ran 3\n");
  CHECK(nothing_left(tag));
}

TEST_CASE("--bind-to core or hwthread pins each rank to its own; --report-bindings says so") {
  if (usable_cpus() < 2) {
    MESSAGE("skipped: fewer than 2 CPUs");
    return;
  }
  // mpirun's --map-by core and hwthread bind like --bind-to (Open MPI's default binding).
  const std::vector<std::pair<std::vector<std::string>, std::string>> spellings = {
      {{"--bind-to", "core"}, "core"}, {{"-bind-to", "core"}, "core"},         {{"--bind-to", "hwthread"}, "hwthread"},
      {{"--map-by", "core"}, "core"},  {{"--map-by", "hwthread"}, "hwthread"},
  };
  for (const auto& [spelling, unit] : spellings) {
    CAPTURE(spelling);
    std::vector<std::string> args = {"-np", "2", "--report-bindings"};
    args.insert(args.end(), spelling.begin(), spelling.end());
    args.insert(args.end(), kPrintAllowed.begin(), kPrintAllowed.end());
    std::string tag;
    const ProcessResult r = run_trainrun(args, &tag);
    CHECK(r.exit_code == 0);
    const auto lists = allowed_lists(r.out);
    REQUIRE(lists.size() == 2);
    CHECK(lists.at(0) != lists.at(1));
    for (const auto& [rank, list] : lists) {
      CAPTURE(rank);
      CHECK(list.find_first_of(",-") == std::string::npos);  // one CPU each (a core without siblings here)
      CHECK(contains(r.err, "[" + std::to_string(rank) + "] trainrun: rank " + std::to_string(rank) + " on "));
      CHECK(contains(r.err, "bound to " + unit + " " + std::to_string(rank) + " (cpus " + list + ")\n"));
    }
    CHECK(nothing_left(tag));
  }
  // Unbound (the default): every rank may use every CPU trainrun may.
  std::vector<std::string> args = {"-np", "2", "--report-bindings"};
  args.insert(args.end(), kPrintAllowed.begin(), kPrintAllowed.end());
  const ProcessResult r = run_trainrun(args);
  const auto lists = allowed_lists(r.out);
  REQUIRE(lists.size() == 2);
  CHECK(lists.at(0) == lists.at(1));
  CHECK(count(r.err, " not bound (cpus " + lists.at(0) + ")\n") == 2);
}

TEST_CASE("--map-by node deals ranks over the hosts; slot (the default) fills each host first") {
  const std::vector<std::string> hosts = {"-H", "localhost:2,127.0.0.1:2"};
  auto host_of_rank = [](const std::string& out) {
    std::vector<std::string> host;
    const std::regex row(R"(\n +(\d+)  (\S+) )");
    for (std::sregex_iterator it(out.begin(), out.end(), row), end; it != end; ++it) host.push_back((*it)[2]);
    return host;
  };
  std::vector<std::string> by_node = hosts, by_node_single = hosts, by_slot = hosts;
  by_node.insert(by_node.end(), {"--map-by", "node"});
  by_node_single.insert(by_node_single.end(), {"-map-by", "node"});
  by_slot.insert(by_slot.end(), {"--map-by", "slot"});
  const std::vector<std::string> dealt = {"localhost", "127.0.0.1", "localhost", "127.0.0.1"};
  const std::vector<std::string> filled = {"localhost", "localhost", "127.0.0.1", "127.0.0.1"};
  CHECK(host_of_rank(dry_run(by_node)) == dealt);
  CHECK(dry_run(by_node_single) == dry_run(by_node));
  CHECK(host_of_rank(dry_run(by_slot)) == filled);
  CHECK(dry_run(by_slot) == dry_run(hosts));
  CHECK(contains(dry_run({"-np", "2", "--bind-to", "core", "--report-bindings"}),
                 "TRAINRUN_BIND_TO=core TRAINRUN_REPORT_BINDINGS=1 "));
  // Under --launcher mpirun, mpirun gets --map-by as given (it places and binds by it).
  CHECK(contains(dry_run({"--mpi", "--map-by", "ppr:1:socket"}), " --bind-to socket --map-by ppr:1:socket "));
  CHECK(contains(dry_run({"--mpi", "-np", "2", "--map-by", "core"}), " --bind-to core --map-by core "));
  CHECK(contains(dry_run({"--mpi", "-np", "2", "--bind-to", "hwthread"}), " --bind-to hwthread --map-by slot "));
  for (const char* option : {"--map-by", "--oversubscribe"}) {
    std::vector<std::string> args = {"--min-np", "1", "-np", "2", option};
    if (std::string(option) == "--map-by") args.push_back("node");
    args.push_back("true");
    check_one_line_error(args, std::string(option == std::string("--map-by") ? "--map-by node" : option) +
                                   " cannot be used in an elastic job (--min-np, --max-np, --host-discovery-script): "
                                   "elastic jobs fill each host's slots in order");
  }
  check_one_line_error({"-np", "2"}, "no program given (see trainrun --help)");
  check_one_line_error({"--bind-to", "hwthreads", "-np", "2", "true"},
                       "--bind-to: hwthreads not in {none,core,hwthread,socket,numa} (see trainrun --help)");
}

namespace {

// A file with `content` under a fresh directory, removed at the end.
class ConfigFile {
 public:
  explicit ConfigFile(const std::string& content) {
    char dir[] = "/tmp/trainrun-config-XXXXXX";
    REQUIRE(::mkdtemp(dir));
    dir_ = dir;
    path_ = dir_ + "/horovod.yaml";
    FILE* f = std::fopen(path_.c_str(), "w");
    REQUIRE(f);
    std::fputs(content.c_str(), f);
    std::fclose(f);
  }
  ~ConfigFile() {
    ::unlink(path_.c_str());
    ::rmdir(dir_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string dir_, path_;
};

}  // namespace

TEST_CASE("horovodrun's --config-file: its settings as trainrun's options; the command line wins") {
  const ConfigFile config(
      "controller: gloo\n"
      "params:\n  fusion_threshold_mb: 32\n  cycle_time_ms: 2.5\n  cache_capacity: 100\n"
      "timeline:\n  filename: /tmp/tl.json\n  mark_cycles: false\n"
      "stall_check:\n  enabled: true\n  warning_time_seconds: 7\n  shutdown_time_seconds: 9\n"
      "logging:\n  level: INFO\n"
      "autotune:\n  enabled: false\n"
      "library_options:\n  gloo_timeout_seconds: 30\n");
  std::string err;
  CHECK(dry_run({"--config-file", config.path(), "-np", "2"}, &err) ==
        dry_run({"--backend", "gloo", "--fusion-threshold-mb", "32", "--cycle-time-ms", "2.5", "--cache-capacity",
                 "100", "--timeline", "/tmp/tl.json", "--stall-warning", "7", "--stall-shutdown", "9",
                 "--gloo-timeout-seconds", "30", "-np", "2"}));
  CHECK(err.empty());
  // The command line wins, whichever spelling it uses.
  const std::string mixed =
      dry_run({"-config-file", config.path(), "--cycle-time-ms", "4", "--stall-check-warning-time-seconds", "1",
               "--timeline-filename", "/tmp/x.json", "-np", "2"});
  CHECK(contains(mixed, "TRAINRUN_CYCLE_TIME_MS=4 "));
  CHECK(contains(mixed, "TRAINRUN_STALL_WARNING=1 "));
  CHECK(contains(mixed, "TRAINRUN_TIMELINE=/tmp/x.json "));
  CHECK(contains(mixed, "TRAINRUN_FUSION_THRESHOLD=33554432 "));
  // Settings trainrun has no use for are accepted with a note.
  const ConfigFile noted(
      "autotune:\n  enabled: true\nlibrary_options:\n  num_nccl_streams: 2\n"
      "stall_check:\n  enabled: false\n");
  CHECK(dry_run({"--config-file", noted.path(), "-np", "2"}, &err) == dry_run({"--no-stall-check", "-np", "2"}));
  CHECK(count(err, "trainrun: note: --config-file " + noted.path() + ": ") == 2);
  CHECK(contains(err, "autotune.enabled: trainrun does not autotune"));
  CHECK(contains(err, "library_options.num_nccl_streams: no such setting in trainrun"));
}

TEST_CASE("a bad --config-file is one line naming the file and the key") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"params:\n  fusion_threshold_mb: 32\n  fusion_treshold: 1\n", "unknown key 'params.fusion_treshold'"},
      {"bogus: 1\n", "unknown key 'bogus'"},
      {"stall_check: {enabled: maybe}\n", "stall_check.enabled: 'maybe' is not true or false"},
      {"- a\n", "not a YAML mapping of settings"},
      {"params: 5\n", "params: not a mapping of settings"},
      {"controller: nccl\n", "controller: 'nccl' is not gloo or mpi"},
      {"params: {cycle_time_ms: [1]}\n", "params.cycle_time_ms: not a single value"},
      // Range errors name the YAML key, not the option it became (issue 37).
      {"stall_check:\n  warning_time_seconds: -5\n",
       "stall_check.warning_time_seconds: Value -5 not in range 0.000000 to 1000000000.000000"},
      {"library_options:\n  gloo_timeout_seconds: 1e400\n",
       "library_options.gloo_timeout_seconds: Value 1e400 not in range 1 to 2592000"},
      {"library_options:\n  gloo_timeout_seconds: 2.5\n",
       "library_options.gloo_timeout_seconds: Value 2.5 not in range 1 to 2592000"},
      {"# " + std::string(1 << 20, 'x') + "\n", "larger than 1 MiB (the most trainrun reads)"},
  };
  for (const auto& [yaml, message] : cases) {
    const ConfigFile config(yaml);
    check_one_line_error({"--config-file", config.path(), "-np", "1", "true"},
                         "--config-file " + config.path() + ": " + message);
  }
  check_one_line_error({"--config-file", "/nonexistent/h.yaml", "-np", "1", "true"},
                       "--config-file /nonexistent/h.yaml: No such file or directory");
}

// A control character in a value (here a timeline file name with an escape
// sequence and a newline) neither colours nor splits --dry-run's line: the
// word is printed as bash's $'...', which pastes back as the same word.
TEST_CASE("--dry-run prints a word with control characters as $'...', on one line") {
  const ConfigFile config("timeline:\n  filename: \"/tmp/a\\e[31mred\\nx\"\n");
  std::string err;
  const std::string out = dry_run({"--config-file", config.path(), "-np", "1"}, &err);
  CHECK(out.find('\x1b') == std::string::npos);
  CHECK(contains(out, "$'TRAINRUN_TIMELINE=/tmp/a\\x1b[31mred\\nx' "));
  CHECK(count(out, "TRAINRUN_TIMELINE") == 1);
  CHECK(count(out, "\n") == count(dry_run({"-np", "1"}), "\n"));
}
