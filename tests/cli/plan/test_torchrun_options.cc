// torchrun's spellings (cli/plan/torchrun_options.h) and the counts behind
// --nproc-per-node auto, cpu and gpu (cli/plan/local_devices.h).
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "cli/plan/local_devices.h"
#include "cli/plan/options.h"
#include "cli/plan/program_path.h"

using namespace trainrun::cli;

namespace {

ParseResult parse(std::vector<const char*> args) {
  args.insert(args.begin(), "trainrun");
  return parse_options(static_cast<int>(args.size()), args.data());
}

// The line of a usage error, without "trainrun: error: ".
std::string error_of(std::vector<const char*> args) {
  const ParseResult r = parse(std::move(args));
  CHECK(r.exit_code == 2);
  return r.error.substr(r.error.find(": error: ") + 9);
}

}  // namespace

TEST_CASE("--nproc-per-node N, auto, cpu or gpu, in both spellings; anything else is exit 2 naming it") {
  CHECK(parse({"--nproc-per-node", "3", "p"}).options.nproc_per_node == 3);
  for (const char* spelling : {"--nproc-per-node", "--nproc_per_node"}) {
    for (const char* word : {"auto", "cpu", "gpu"}) {
      CAPTURE(word);
      const ParseResult r = parse({spelling, word, "p"});
      REQUIRE(r.exit_code == -1);
      CHECK(r.options.nproc_per_node == 0);  // counted later, on this machine
      CHECK(r.options.nproc_per_node_count == word);
      CHECK(r.options.notes.empty());
    }
  }
  CHECK(parse({"--nproc-per-node=gpu", "p"}).options.nproc_per_node_count == "gpu");
  CHECK(error_of({"--nproc-per-node", "two", "p"}) ==
        "--nproc-per-node: 'two' is not a number of ranks: give a whole number from 1 to 1048576, or auto, cpu or "
        "gpu (see trainrun --help)");
  CHECK(error_of({"--nproc-per-node", "0", "p"}).find("'0' is not a number of ranks") != std::string::npos);
  CHECK(error_of({"--nproc_per_node", "xpu", "p"}).find("counts CUDA GPUs (gpu) and CPUs (cpu)") != std::string::npos);
}

TEST_CASE("--nproc-per-node auto, cpu and gpu count this machine's devices, and only on this machine") {
  Options o;
  o.nproc_per_node_count = "auto";
  CHECK(count_nproc_per_node(o, 0, 6).empty());
  CHECK(o.nproc_per_node == 6);  // no GPU: the CPUs
  CHECK(count_nproc_per_node(o, 2, 6).empty());
  CHECK(o.nproc_per_node == 2);
  o.nproc_per_node_count = "cpu";
  CHECK(count_nproc_per_node(o, 2, 6).empty());
  CHECK(o.nproc_per_node == 6);
  o.nproc_per_node_count = "gpu";
  CHECK(count_nproc_per_node(o, 4, 6).empty());
  CHECK(o.nproc_per_node == 4);
  CHECK(count_nproc_per_node(o, 0, 6).rfind("--nproc-per-node gpu: no CUDA GPU here", 0) == 0);
  o.hosts = "a,b";
  CHECK(count_nproc_per_node(o, 4, 6).find("other hosts' are not known before they start") != std::string::npos);
  Options given;  // a number: nothing to count
  given.nproc_per_node = 3;
  CHECK(count_nproc_per_node(given, 0, 6).empty());
  CHECK(given.nproc_per_node == 3);
  CHECK(usable_cpus() >= 1);
}

TEST_CASE("GPUs: the /dev/nvidiaN nodes, narrowed by CUDA_VISIBLE_DEVICES as CUDA reads it") {
  char dir[] = "/tmp/trainrun-dev-XXXXXX";
  REQUIRE(::mkdtemp(dir));
  CHECK(nvidia_device_nodes(dir) == 0);
  for (const char* name : {"nvidia0", "nvidia1", "nvidia2", "nvidiactl", "nvidia-uvm", "nvidia-modeset", "null"}) {
    std::ofstream(std::string(dir) + "/" + name);
  }
  CHECK(nvidia_device_nodes(dir) == 3);
  CHECK(nvidia_device_nodes("/no/such/dir") == 0);
  CHECK(visible_cuda_gpus(dir, nullptr) == 3);
  CHECK(visible_cuda_gpus(dir, "1") == 1);
  CHECK(cuda_visible_count(3, "") == 0);
  CHECK(cuda_visible_count(3, "0,2") == 2);
  CHECK(cuda_visible_count(3, "2,0,1") == 3);
  CHECK(cuda_visible_count(3, "0,5,1") == 1);  // cut at the first entry that names no device
  CHECK(cuda_visible_count(3, "-1") == 0);     // the usual way to hide them all
  CHECK(cuda_visible_count(3, "0,0,1") == 1);  // a repeat ends the list too
  CHECK(cuda_visible_count(3, "GPU-8f3a,MIG-1") == 2);
  CHECK(cuda_visible_count(1, "GPU-8f3a,GPU-77") == 1);  // never more than there are
  CHECK(cuda_visible_count(0, "0") == 0);
  CHECK(std::system(("rm -rf " + std::string(dir)).c_str()) == 0);
}

TEST_CASE("-m, --run-path and --no-python choose how the program runs; -m with --no-python is exit 2") {
  const ParseResult module = parse({"-np", "2", "-m", "pkg.train", "--lr", "0.1"});
  REQUIRE(module.exit_code == -1);
  CHECK(module.options.python_run == PythonRun::Module);
  CHECK(module.options.command == std::vector<std::string>{"pkg.train", "--lr", "0.1"});
  CHECK(module.options.notes.empty());  // python3 -m, as torchrun runs it
  CHECK(with_interpreter(module.options.command, "/bin", PythonRun::Module) ==
        std::vector<std::string>{kPythonInterpreter, "-m", "pkg.train", "--lr", "0.1"});
  CHECK(parse({"--module", "-np", "1", "m"}).options.python_run == PythonRun::Module);

  const ParseResult path = parse({"--run_path", "/abs/train.py", "x"});
  REQUIRE(path.exit_code == -1);
  CHECK(path.options.python_run == PythonRun::Script);
  CHECK(path.options.notes.size() == 1);
  CHECK(with_interpreter({"/abs/train.py", "x"}, "/bin", PythonRun::Script) ==
        std::vector<std::string>{kPythonInterpreter, "/abs/train.py", "x"});

  for (const char* spelling : {"--no-python", "--no_python"}) {
    const ParseResult direct = parse({spelling, "./train.py"});
    REQUIRE(direct.exit_code == -1);
    CHECK(direct.options.python_run == PythonRun::Never);
    CHECK(direct.options.notes.empty());  // trainrun's way already
  }
  CHECK(with_interpreter({"train.py"}, "/bin", PythonRun::Never) == std::vector<std::string>{"train.py"});
  CHECK(parse({"p"}).options.python_run == PythonRun::AsNeeded);
  CHECK(error_of({"-m", "--no-python", "mod"}) ==
        "-m runs the module with python3 -m; it cannot be used with --no-python");
  CHECK(parse({"--run-path", "--no-python", "-m", "s.py"}).options.python_run == PythonRun::Script);  // as torchrun
}

TEST_CASE("--log-dir is --output-filename; --tee and --redirects are checked and noted") {
  const ParseResult r = parse({"--log_dir", "/tmp/logs", "-t", "3", "--redirects", "0:1,1:2", "p"});
  REQUIRE(r.exit_code == -1);
  CHECK(r.options.output_dir == "/tmp/logs");
  REQUIRE(r.options.notes.size() == 3);
  CHECK(r.options.notes[0].rfind("--log-dir: each rank's stdout and stderr go to DIR/rank.NN/", 0) == 0);
  CHECK(r.options.notes[1].rfind("--tee: every rank's stdout and stderr go to the files and the console", 0) == 0);
  CHECK(r.options.notes[2].rfind("--redirects: every rank's stdout and stderr go to the files", 0) == 0);
  const ParseResult no_dir = parse({"--tee", "1", "p"});
  REQUIRE(no_dir.options.notes.size() == 1);
  CHECK(no_dir.options.notes[0].rfind("--tee: no files without --log-dir DIR", 0) == 0);
  CHECK(parse({"--tee", "0", "-r", "0", "p"}).options.notes.empty());  // torchrun's default: nothing to say
  for (const char* bad : {"4", "x", "0:", "0:1,", ":1", "0:4", "0:1,,1:2"}) {
    CAPTURE(bad);
    CHECK(parse({"--tee", bad, "p"}).exit_code == 2);
  }
  CHECK(parse({"--log-dir", "a", "--output-filename", "b", "p"}).exit_code == 2);
  CHECK(parse({"--log-dir", "", "p"}).exit_code == 2);
  const ParseResult filter = parse({"--local_ranks_filter", "0,1", "p"});
  CHECK(filter.options.rank_filter == "0,1");
  CHECK(filter.options.notes.size() == 1);
}

TEST_CASE("torchrun's supervision options: --max_restarts mapped, the others a note or a value for the ranks") {
  CHECK(parse({"--max_restarts", "2", "-np", "2", "p"}).options.reset_limit == 2);
  for (std::vector<const char*> args : {std::vector<const char*>{"--monitor-interval", "5"},
                                        {"--monitor_interval", "0.1"},
                                        {"--start-method", "spawn"},
                                        {"--start_method", "fork"},
                                        {"--event-log-handler", "null"},
                                        {"--signals_to_handle", "SIGTERM,SIGUSR1"}}) {
    CAPTURE(args[0]);
    args.insert(args.end(), {"-np", "2", "p", "a"});
    const ParseResult r = parse(args);
    REQUIRE(r.exit_code == -1);
    CHECK(r.options.command == std::vector<std::string>{"p", "a"});
    CHECK(r.options.notes.size() == 1);
  }
  CHECK(parse({"--start-method", "thread", "p"}).exit_code == 2);
  CHECK(parse({"--monitor-interval", "soon", "p"}).exit_code == 2);
  const ParseResult role = parse({"--role", "trainer", "p"});
  CHECK(role.options.env_forward == std::vector<std::string>{"ROLE_NAME=trainer"});
  CHECK(role.options.notes.empty());
  const ParseResult numa = parse({"--numa-binding", "node", "p"});
  CHECK(numa.options.bind_to == "numa");
  CHECK(numa.options.notes.size() == 1);
  CHECK(parse({"--numa_binding", "socket", "--bind-to", "core", "p"}).options.bind_to == "core");  // --bind-to wins
  CHECK(error_of({"--numa-binding", "exclusive", "p"}).find("--bind-to core") != std::string::npos);
}

TEST_CASE("one trainrun per node: torchrun's options in both spellings set the per-node launch's") {
  const ParseResult r =
      parse({"--nnodes", "3", "--node_rank", "2", "--master-addr", "h1", "--master_port", "1234", "--rdzv-backend",
             "static", "--rdzv_id", "job7", "--rdzv-conf", "join_timeout=5", "--rdzv-secret-file", "/s", "p"});
  REQUIRE(r.exit_code == -1);
  CHECK(r.options.nnodes == 3);
  CHECK(r.options.max_nnodes == 0);
  CHECK(r.options.node.node_rank == 2);
  CHECK(r.options.node.master_addr == "h1");
  CHECK(r.options.node.master_port == 1234);
  CHECK(r.options.node.rdzv_backend == "static");
  CHECK(r.options.node.rdzv_id == "job7");
  CHECK(r.options.node.rdzv_conf == "join_timeout=5");
  CHECK(r.options.node.secret_file == "/s");
  const ParseResult c10d = parse({"--nnodes", "2:4", "--rdzv_backend", "c10d", "--rdzv_endpoint", "h1:29400", "p"});
  CHECK(c10d.options.nnodes == 2);
  CHECK(c10d.options.max_nnodes == 4);
  CHECK(c10d.options.node.rdzv_endpoint == "h1:29400");
  for (const char* bad : {"0", "two", "3:2", "1:", ":2", "1:2:3"}) {
    CAPTURE(bad);
    CHECK(error_of({"--nnodes", bad, "p"}).rfind("--nnodes: ", 0) == 0);
  }
  CHECK(error_of({"--nnodes", "3:2", "p"}).find("MIN is larger than MAX") != std::string::npos);
  CHECK(error_of({"--rdzv-backend", "etcd", "p"}).rfind("--rdzv-backend: ", 0) == 0);
  CHECK(error_of({"--node-rank", "-1", "p"}).rfind("--node-rank: ", 0) == 0);
  CHECK(error_of({"--local-addr", "10.0.0.1", "p"}).find("--network-interface NAME") != std::string::npos);
  CHECK(error_of({"--logs_specs", "mine", "p"}).find("--output-filename DIR") != std::string::npos);
}

TEST_CASE("torchrun's PET_* variables give what the command line does not, as torchrun reads them") {
  ::setenv("PET_NNODES", "3", 1);
  ::setenv("PET_NODE_RANK", "1", 1);
  ::setenv("PET_NPROC_PER_NODE", "2", 1);
  ::setenv("PET_MASTER_ADDR", "pytorchjob-master-0", 1);
  ::setenv("PET_MASTER_PORT", "23456", 1);
  const ParseResult r = parse({"p"});
  const ParseResult given = parse({"--node-rank", "2", "--nnodes", "4", "p"});
  ::setenv("PET_NNODES", "many", 1);
  const ParseResult bad = parse({"p"});
  for (const char* name : {"PET_NNODES", "PET_NODE_RANK", "PET_NPROC_PER_NODE", "PET_MASTER_ADDR", "PET_MASTER_PORT"}) {
    ::unsetenv(name);
  }
  REQUIRE(r.exit_code == -1);
  CHECK(r.options.nnodes == 3);
  CHECK(r.options.node.node_rank == 1);
  CHECK(r.options.nproc_per_node == 2);
  CHECK(r.options.node.master_addr == "pytorchjob-master-0");
  CHECK(r.options.node.master_port == 23456);
  CHECK(given.options.node.node_rank == 2);  // the command line wins
  CHECK(given.options.nnodes == 4);
  CHECK(bad.exit_code == 2);
  CHECK(bad.error.find("--nnodes") != std::string::npos);
}

TEST_CASE("--nnodes MIN:MAX with hosts is an elastic job of MIN to MAX hosts' ranks") {
  const ParseResult r = parse({"--nnodes", "1:2", "--nproc-per-node", "2", "-H", "a:2,b:2", "p"});
  REQUIRE(r.exit_code == -1);
  CHECK(r.options.min_np == 2);
  CHECK(r.options.max_np == 4);
  CHECK(r.options.nnodes == 0);
  REQUIRE(r.options.notes.size() == 1);
  CHECK(r.options.notes[0] ==
        "--nnodes 1:2: an elastic job of 2 to 4 rank(s) (--min-np 2 --max-np 4) on the hosts given");
  CHECK(error_of({"--nnodes", "1:2", "--min-np", "1", "-H", "a,b", "p"}).find("give one of them") != std::string::npos);
}
