// torchrun's habits through the real trainrun binary and real jobs: a .py
// program runs with the Python that has trainrun, ranks get torchrun's
// worker variables (GROUP_RANK, ROLE_*, TORCHELASTIC_*) and OMP_NUM_THREADS=1
// when they share a host, --nnodes/--nproc-per-node that disagree are one
// line, --nproc-per-node cpu/auto/gpu count this machine's devices, -m runs
// a Python module, --log-dir writes the ranks' files with one note, the
// per-node options without --nnodes are one line (the per-node launch
// itself: test_per_node.cc), and --max-restarts N restarts
// the whole job after a failure, at most N times, one line each, leaving no
// process behind.
#include <doctest/doctest.h>

#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/trainrun_runner.h"

using namespace trainrun::test;

namespace {

// A fresh directory under /tmp, removed with what the test wrote in it.
struct TempDir {
  std::string path;
  TempDir() {
    char name[] = "/tmp/trainrun-torchrun-XXXXXX";
    REQUIRE(::mkdtemp(name));
    path = name;
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
  std::string write(const std::string& name, const std::string& text, mode_t mode) const {
    const std::string file = path + "/" + name;
    std::ofstream(file) << text;
    ::chmod(file.c_str(), mode);
    return file;
  }
};

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// `shell` (a sh -c line that ends by exec'ing trainrun) with the tag ranks carry.
ProcessResult run_shell(const std::string& shell, std::string* tag) {
  ProcessOptions options;
  options.env.push_back(unique_tag());
  *tag = options.env.back();
  return run_process({"/bin/sh", "-c", shell}, options);
}

int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  REQUIRE(::sched_getaffinity(0, sizeof set, &set) == 0);
  return CPU_COUNT(&set);
}

}  // namespace

TEST_CASE("torchrun's --nnodes and --nproc-per-node that disagree: exit 2, one line") {
  const struct {
    std::vector<std::string> args;
    std::string error;
  } cases[] = {
      {{"--nnodes", "3", "-H", "localhost,127.0.0.1"},
       "--nnodes 3 does not match the 2 host(s) of -H (localhost:1,127.0.0.1:1)"},
      {{"--nnodes", "2", "--node-rank", "1", "-H", "localhost,127.0.0.1"},
       "--node-rank, --master-addr and --rdzv-* start one trainrun per node; -H starts every host's ranks from this "
       "one: give one of them"},
      {{"-np", "3", "--nproc_per_node", "2"},
       "-np 3 does not match --nproc-per-node 2 x 1 host(s) = 2 (give one of them)"},
      {{"-np", "3", "--nproc-per-node", "2", "-H", "localhost,127.0.0.1"},
       "-np 3 does not match --nproc-per-node 2 x 2 host(s) = 4 (give one of them)"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = c.args;
    args.push_back("true");
    CAPTURE(args);
    std::string tag;
    const ProcessResult r = run_trainrun(args, &tag);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err == "trainrun: error: " + c.error + "\n");
    CHECK(nothing_left(tag));
  }
}

TEST_CASE("trainrun -np 2 train.py runs it with the Python that has trainrun, with torchrun's variables") {
  if (::access("/usr/bin/python3", X_OK) != 0) return;  // the interpreter trainrun names
  const TempDir dir;
  dir.write(
      "train.py",
      "import os\n"
      "e = os.environ\n"
      "print('rank', e['RANK'], 'group', e['GROUP_RANK'], e['GROUP_WORLD_SIZE'], 'role', e['ROLE_RANK'],\n"
      "      e['ROLE_WORLD_SIZE'], 'restart', e['TORCHELASTIC_RESTART_COUNT'], e['TORCHELASTIC_MAX_RESTARTS'],\n"
      "      'run_id', e['TORCHELASTIC_RUN_ID'] == e['TRAINRUN_JOB_ID'] != '', 'omp', e.get('OMP_NUM_THREADS'))\n",
      0644);  // not executable, and not on PATH: was "program 'train.py' not found in PATH"
  const std::string cd = "cd '" + dir.path + "' && exec env -u OMP_NUM_THREADS ";
  std::string tag;
  const ProcessResult r = run_shell(cd + "'" + trainrun_bin() + "' -np 2 train.py", &tag);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.out, "[0] rank 0 group 0 1 role 0 2 restart 0 0 run_id True omp 1\n"));
  CHECK(contains(r.out, "[1] rank 1 group 0 1 role 1 2 restart 0 0 run_id True omp 1\n"));
  CHECK(r.err.empty());  // the OMP_NUM_THREADS note is --verbose's
  CHECK(nothing_left(tag));

  // The user's OMP_NUM_THREADS stays, without a note; one rank per host: none set.
  const ProcessResult own = run_shell(cd + "OMP_NUM_THREADS=3 '" + trainrun_bin() + "' -np 2 train.py", &tag);
  CHECK(own.exit_code == 0);
  CHECK(count(own.out, "omp 3\n") == 2);
  CHECK_FALSE(contains(own.err, "OMP_NUM_THREADS"));
  const ProcessResult one = run_shell(cd + "'" + trainrun_bin() + "' -np 1 ./train.py --lr 0.1", &tag);
  CHECK(one.exit_code == 0);
  CHECK(contains(one.out, "omp None\n"));
  CHECK_FALSE(contains(one.err, "OMP_NUM_THREADS"));

  // The dry run shows the interpreter in each rank's command.
  const ProcessResult dry = run_shell(cd + "'" + trainrun_bin() +
                                          "' --standalone --nproc-per-node 2 --dry-run "
                                          "train.py",
                                      &tag);
  CHECK(dry.exit_code == 0);
  CHECK(count(dry.out, " /usr/bin/python3 train.py\n") == 2);
}

TEST_CASE("--nproc-per-node cpu and auto (no GPU visible) start one rank per CPU; gpu without one is exit 2") {
  const int cpus = usable_cpus();
  ProcessOptions no_gpu;
  no_gpu.env.push_back("CUDA_VISIBLE_DEVICES=");  // whatever this machine has, CUDA sees none
  for (const char* word : {"cpu", "auto"}) {
    CAPTURE(word);
    std::string tag;
    const ProcessResult r = run_trainrun({"--nproc-per-node", word, "--standalone", "/bin/echo", "hi"}, &tag, no_gpu);
    CHECK(r.exit_code == 0);
    CHECK(count(r.out, "] hi\n") == cpus);
    CHECK(r.err.empty());
    CHECK(nothing_left(tag));
  }
  std::string tag;
  const ProcessResult gpu = run_trainrun({"--nproc_per_node", "gpu", "/bin/echo", "hi"}, &tag, no_gpu);
  CHECK(gpu.exit_code == 2);
  CHECK(gpu.out.empty());
  CHECK(gpu.err ==
        "trainrun: error: --nproc-per-node gpu: no CUDA GPU here (no /dev/nvidiaN, or CUDA_VISIBLE_DEVICES hides "
        "them); give the ranks, --nproc-per-node N, or cpu\n");
  CHECK(nothing_left(tag));
}

TEST_CASE("-m MODULE: every rank runs python3 -m MODULE with its arguments") {
  if (::access("/usr/bin/python3", X_OK) != 0) return;  // the interpreter trainrun names
  const TempDir dir;
  REQUIRE(::mkdir((dir.path + "/pkg").c_str(), 0755) == 0);
  std::ofstream(dir.path + "/pkg/__init__.py");
  std::ofstream(dir.path + "/pkg/train.py") << "import os, sys\nprint('rank', os.environ['RANK'], sys.argv[1:])\n";
  ProcessOptions in_dir;
  in_dir.cwd = dir.path;
  std::string tag;
  const ProcessResult r = run_trainrun({"-np", "2", "-m", "pkg.train", "--lr", "0.1"}, &tag, in_dir);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.out, "[0] rank 0 ['--lr', '0.1']\n"));
  CHECK(contains(r.out, "[1] rank 1 ['--lr', '0.1']\n"));
  CHECK(r.err.empty());  // python3 -m, as torchrun runs it: nothing to say
  CHECK(nothing_left(tag));
  const ProcessResult both = run_trainrun({"--no-python", "-m", "pkg.train"}, &tag, in_dir);
  CHECK(both.exit_code == 2);
  CHECK(both.err == "trainrun: error: -m runs the module with python3 -m; it cannot be used with --no-python\n");
}

TEST_CASE("--log_dir DIR --tee 3: the ranks' files under DIR, the console keeps every line, one note each") {
  const TempDir dir;
  std::string tag;
  const ProcessResult r = run_trainrun(
      {"--log_dir", dir.path, "--tee", "3", "-np", "2", "sh", "-c", "echo out $RANK; echo err $RANK >&2"}, &tag);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.out, "[1] out 1\n"));
  CHECK(contains(r.err, "[1] err 1\n"));
  CHECK(read_all(dir.path + "/rank.01/stdout") == "out 1\n");
  CHECK(read_all(dir.path + "/rank.00/stderr") == "err 0\n");
  CHECK(count(r.err, "trainrun: note: --log-dir: ") == 1);
  CHECK(count(r.err, "trainrun: note: --tee: ") == 1);
  CHECK(nothing_left(tag));
}

TEST_CASE("one trainrun per node (--master-port, --node-rank, --rdzv-endpoint) without --nnodes: exit 2, one line") {
  for (const char* option : {"--master_port", "--node-rank", "--rdzv-endpoint"}) {
    CAPTURE(option);
    std::string tag;
    const ProcessResult r = run_trainrun({option, "1", "--nproc-per-node", "2", "true"}, &tag);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err ==
          "trainrun: error: a per-node launch needs --nnodes N (the number of nodes; torchrun's PET_NNODES)\n");
    CHECK(nothing_left(tag));
  }
}

namespace {

// Rank 1 fails (exit 3) on its first `failures` runs, counted in a file;
// rank 0 waits to be stopped, or for rank 1's success.
std::string failing_program(const TempDir& dir, int failures) {
  return dir.write("rank.sh",
                   "#!/bin/sh\n"
                   "if [ \"$TRAINRUN_RANK\" = 1 ]; then\n"
                   "  n=$(cat '" +
                       dir.path +
                       "/runs' 2>/dev/null || echo 0)\n"
                       "  echo $((n + 1)) > '" +
                       dir.path +
                       "/runs'\n"
                       "  echo \"run $n restart $TORCHELASTIC_RESTART_COUNT of $TORCHELASTIC_MAX_RESTARTS\"\n"
                       "  [ \"$n\" -lt " +
                       std::to_string(failures) +
                       " ] && exit 3\n"
                       "  touch '" +
                       dir.path +
                       "/done'\n"
                       "  exit 0\n"
                       "fi\n"
                       "for i in $(seq 3000); do [ -e '" +
                       dir.path + "/done' ] && exit 0; sleep 0.1; done\n",
                   0755);
}

// trainrun -np 2 --max-restarts 2 --report DIR/report.json PROGRAM; the report's text in `json`.
ProcessResult run_restarting(const TempDir& dir, const std::string& program, std::string* json, std::string* tag) {
  const std::string report = dir.path + "/report.json";
  const ProcessResult r = run_trainrun({"-np", "2", "--max-restarts", "2", "--report", report, program}, tag);
  *json = read_all(report);
  return r;
}

}  // namespace

TEST_CASE("--max-restarts 2: a rank that fails once restarts the job once, then it succeeds") {
  const TempDir dir;
  const std::string program = failing_program(dir, 1);
  std::string json, tag;
  const ProcessResult r = run_restarting(dir, program, &json, &tag);
  CHECK(r.exit_code == 0);
  CHECK(count(r.err, "; restarting the job (restart ") == 1);
  CHECK(contains(r.err, " exited with code 3; restarting the job (restart 1 of 2)\n"));
  CHECK_FALSE(contains(r.err, "job failed"));
  CHECK(contains(r.out, "[1] run 0 restart 0 of 2\n"));
  CHECK(contains(r.out, "[1] run 1 restart 1 of 2\n"));
  CHECK(contains(json, "\"restarts\": 1,"));
  CHECK(contains(json, "\"outcome\": \"success\""));
  CHECK(nothing_left(tag));
}

TEST_CASE("--max-restarts 2: a rank that always fails restarts the job twice, then ends it with its code") {
  const TempDir dir;
  const std::string program = failing_program(dir, 100);
  std::string json, tag;
  const ProcessResult r = run_restarting(dir, program, &json, &tag);
  CHECK(r.exit_code == 3);
  CHECK(count(r.err, "; restarting the job (restart ") == 2);
  CHECK(contains(r.err, "; restarting the job (restart 2 of 2)\n"));
  CHECK(count(r.err, "trainrun: job failed: rank 1 ") == 1);
  CHECK(read_all(dir.path + "/runs") == "3\n");
  CHECK(contains(json, "\"restarts\": 2,"));
  CHECK(contains(json, "\"outcome\": \"rank_failed\""));
  CHECK(nothing_left(tag));

  // Without --max-restarts the first failure ends the job, as before.
  ::unlink((dir.path + "/runs").c_str());
  const ProcessResult once = run_trainrun({"-np", "2", program}, &tag);
  CHECK(once.exit_code == 3);
  CHECK_FALSE(contains(once.err, "restarting"));
  CHECK(read_all(dir.path + "/runs") == "1\n");
  CHECK(nothing_left(tag));
}

TEST_CASE("--max-restarts 2: a torch DDP job whose rank fails once exits 0 after one restart; failing thrice, 3") {
  if (std::system("/usr/bin/python3 -c 'import torch.distributed' 2>/dev/null") != 0) return;  // no torch
  const std::string script = std::string(TORCHRUN_TEST_DIR) + "/ddp_restart.py";  // 0644: runs with python3
  std::string tag;
  const ProcessResult once = run_trainrun({"-np", "2", "--max-restarts", "2", script, "1"}, &tag);
  CHECK(once.exit_code == 0);
  CHECK(count(once.err, "; restarting the job (restart ") == 1);
  CHECK(contains(once.out, "[1] rank 1 fails in run 0\n"));
  CHECK(contains(once.out, "[0] rank 0 done in run 1 "));
  CHECK(contains(once.out, "[1] rank 1 done in run 1 "));
  CHECK(nothing_left(tag));

  const ProcessResult always = run_trainrun({"-np", "2", "--max-restarts", "2", script, "9"}, &tag);
  CHECK(always.exit_code == 3);
  CHECK(count(always.err, "; restarting the job (restart ") == 2);
  CHECK(count(always.out, "[1] rank 1 fails in run ") == 3);
  CHECK(contains(always.err, "trainrun: job failed: rank 1 "));
  CHECK(nothing_left(tag));
}

namespace {

// trainrun -np 2 --max-restarts 50 --report DIR/report.json PROGRAM, with a
// signal sent `delay` after the first "restarting the job" line: a job in
// the middle of a restart (ranks being stopped, the next attempt starting).
ProcessResult signalled_while_restarting(const TempDir& dir, const std::string& program, int sig,
                                         std::chrono::milliseconds delay, std::string* json, std::string* tag) {
  ProcessOptions options;
  options.env.push_back(unique_tag());
  *tag = options.env.back();
  const std::string report = dir.path + "/report.json";
  Child job({trainrun_bin(), "-np", "2", "--max-restarts", "50", "--grace", "2", "--report", report, program}, options);
  REQUIRE(job.wait_for_output("; restarting the job (restart 1 of 50)", std::chrono::seconds(30)));
  std::this_thread::sleep_for(delay);
  job.signal(sig);
  const ProcessResult r = job.wait();
  *json = read_all(report);
  return r;
}

}  // namespace

TEST_CASE("SIGTERM, SIGINT or SIGHUP while the job restarts: 143, 130, 129, the summary, the report, no restart") {
  const struct {
    int sig;
    int code;
    const char* name;
    int delay_ms;
  } cases[] = {{SIGTERM, 143, "SIGTERM", 0},   {SIGTERM, 143, "SIGTERM", 20}, {SIGTERM, 143, "SIGTERM", 60},
               {SIGTERM, 143, "SIGTERM", 150}, {SIGINT, 130, "SIGINT", 0},    {SIGINT, 130, "SIGINT", 40},
               {SIGHUP, 129, "SIGHUP", 10},    {SIGTERM, 143, "SIGTERM", 5},  {SIGTERM, 143, "SIGTERM", 100}};
  for (const auto& c : cases) {
    const std::string name = c.name;
    CAPTURE(name);
    CAPTURE(c.delay_ms);
    const TempDir dir;
    const std::string program = failing_program(dir, 1000);  // rank 1 fails every run
    std::string json, tag;
    const ProcessResult r =
        signalled_while_restarting(dir, program, c.sig, std::chrono::milliseconds(c.delay_ms), &json, &tag);
    CHECK(r.exit_code == c.code);
    CHECK(contains(r.err, "trainrun: stopped by " + std::string(c.name) + "; all ranks were terminated"));
    // Restarts may have come before the signal did; none after it.
    const std::size_t received = r.err.rfind("trainrun: received " + name);
    REQUIRE(received != std::string::npos);
    CHECK(r.err.find("restarting the job", received) == std::string::npos);
    CHECK(contains(json, "\"outcome\": \"signal\""));
    CHECK(nothing_left(tag));
  }
}

TEST_CASE("SIGUSR1 while the job restarts never kills trainrun: the job goes on to its end") {
  for (int delay_ms : {0, 15, 50, 120}) {
    CAPTURE(delay_ms);
    const TempDir dir;
    // Rank 1 fails on its first two runs; every rank ignores SIGUSR1.
    const std::string failing = failing_program(dir, 2);
    const std::string program = dir.write("ignoring.sh", "#!/bin/sh\ntrap '' USR1\nexec '" + failing + "'\n", 0755);
    std::string json, tag;
    const ProcessResult r =
        signalled_while_restarting(dir, program, SIGUSR1, std::chrono::milliseconds(delay_ms), &json, &tag);
    CHECK(r.exit_code == 0);
    CHECK(contains(json, "\"outcome\": \"success\""));
    CHECK(nothing_left(tag));
  }
}

TEST_CASE("--max-restarts with --output-filename: the files keep every attempt, each restart under its own line") {
  const TempDir dir;
  const std::string program = failing_program(dir, 1);
  std::string tag;
  const ProcessResult r =
      run_trainrun({"-np", "2", "--max-restarts", "2", "--output-filename", dir.path + "/out", program}, &tag);
  CHECK(r.exit_code == 0);
  CHECK(read_all(dir.path + "/out/rank.01/stdout") ==
        "run 0 restart 0 of 2\n==== trainrun: restart 1 of 2 ====\nrun 1 restart 1 of 2\n");
  CHECK(read_all(dir.path + "/out/rank.00/stdout") == "==== trainrun: restart 1 of 2 ====\n");
  CHECK(nothing_left(tag));
}
