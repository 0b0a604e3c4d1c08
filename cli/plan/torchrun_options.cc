#include "cli/plan/torchrun_options.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <string>

#include "cli/plan/compat_options.h"
#include "cli/plan/options.h"
#include "cli/plan/printable.h"
#include "cli/plan/rank_count.h"

namespace trainrun::cli {
namespace {

constexpr const char* kGroup = kCompatGroup;

// --nproc-per-node: a number of ranks, or auto, cpu or gpu (counted on this
// machine before the plan: cli/plan/local_devices.h).
CLI::Validator nproc_per_node_value() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (text == "auto" || text == "cpu" || text == "gpu") return "";
        if (text == "xpu") return "'xpu': trainrun counts CUDA GPUs (gpu) and CPUs (cpu); give the number of ranks";
        const std::string why = rank_count()(text);
        return why.empty() ? "" : why + ", or auto, cpu or gpu";
      },
      "");
}

// --tee and --redirects: 0 to 3 (none, stdout, stderr, both), or
// LOCAL_RANK:0-3 pairs separated by commas, as torchrun reads them.
CLI::Validator streams_value() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const auto stream = [](char c) { return c >= '0' && c <= '3'; };
        if (text.size() == 1 && stream(text[0])) return "";
        bool ok = !text.empty();
        for (std::size_t at = 0; ok && at < text.size();) {
          std::size_t digits = at;
          while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
          ok = digits > at && digits + 1 < text.size() && text[digits] == ':' && stream(text[digits + 1]) &&
               (digits + 2 == text.size() || (text[digits + 2] == ',' && digits + 3 < text.size()));
          at = digits + 3;
        }
        return ok ? "" : trainrun::cli::quoted(text) + " is not 0, 1, 2, 3 or LOCAL_RANK:0-3,...";
      },
      "");
}

// An option torchrun has and trainrun refuses, with one line saying what
// to give instead; its value is taken, so that the line names the option.
void refuse(CLI::App& app, const char* names, const char* name, const std::string& why, const char* help) {
  app.add_option_function<std::string>(
         names, [name, why](const std::string&) { throw CLI::ValidationError(name, why); }, help)
      ->type_name("VALUE")
      ->group(kGroup);
}

// The job's shape: ranks per host, hosts, one host.
void add_shape(CLI::App& app, Options& o) {
  app.add_option_function<std::string>(
         "--nproc-per-node,--nproc_per_node",
         [&o](const std::string& value) {
           const bool counted = value == "auto" || value == "cpu" || value == "gpu";
           o.nproc_per_node_count = counted ? value : "";
           o.nproc_per_node = counted ? 0 : std::stoi(value);
         },
         "torchrun: ranks on every host; with -H/--hostfile each host gets this many [-H host:N], -np is hosts x "
         "N. gpu: the CUDA GPUs here (after CUDA_VISIBLE_DEVICES), cpu: the CPUs trainrun may use, auto: gpu if "
         "any, else cpu (counted on this machine: not with -H)")
      ->check(nproc_per_node_value())
      ->envname("PET_NPROC_PER_NODE")
      ->type_name("N|auto|cpu|gpu")
      ->group(kGroup);
  app.add_flag("--standalone", o.local, "torchrun: one host, rendezvous here [--local]")->group(kGroup);
}

// How the program runs: -m, --no-python, --run-path (finish_torchrun).
void add_program(CLI::App& app, Options& o) {
  app.add_flag("-m,--module", o.python_module, "torchrun: the program is a Python module: python3 -m MODULE ARGS")
      ->group(kGroup);
  app.add_flag("--no-python,--no_python", o.no_python,
               "torchrun: run the program itself, never with python3 in front (not even a .py)")
      ->group(kGroup);
  app.add_flag("--run-path,--run_path", o.run_path,
               "torchrun: the program is a Python script: python3 SCRIPT ARGS (note)")
      ->group(kGroup);
  app.add_option_function<std::string>(
         "--role", [&o](const std::string& role) { o.env_forward.push_back("ROLE_NAME=" + role); },
         "torchrun: the ranks' role name [-x ROLE_NAME=NAME]")
      ->type_name("NAME")
      ->group(kGroup);
}

// Where the ranks' output goes: --log-dir, --tee, --redirects, --local-ranks-filter.
void add_logs(CLI::App& app, Options& o) {
  app.add_option_function<std::string>(
         "--log-dir,--log_dir",
         [&o](const std::string& dir) {
           if (dir.empty()) throw CLI::ValidationError("--log-dir", "empty directory name");
           o.output_dir = dir;
           o.notes.push_back(
               "--log-dir: each rank's stdout and stderr go to DIR/rank.NN/stdout and stderr (--output-filename "
               "DIR) and to the console; torchrun's DIR/RUN_ID/attempt_N/LOCAL_RANK/ layout is not made");
         },
         "torchrun: [--output-filename DIR] (note)")
      ->excludes("--output-filename")
      ->type_name("DIR")
      ->group(kGroup);
  app.add_option("-t,--tee", o.tee, "torchrun: the console and the --log-dir files get every rank's output (note)")
      ->check(streams_value())
      ->type_name("SPEC")
      ->group(kGroup);
  app.add_option("-r,--redirects", o.redirects,
                 "torchrun: the --log-dir files get every rank's output; the console keeps it too (note)")
      ->check(streams_value())
      ->type_name("SPEC")
      ->group(kGroup);
  app.add_option_function<std::string>(
         "--local-ranks-filter,--local_ranks_filter",
         [&o](const std::string& ranks) {
           o.rank_filter = ranks;
           o.notes.push_back(
               "--local-ranks-filter: trainrun filters the console by rank in the whole job (--rank-filter); on "
               "one host that is the local rank");
         },
         "torchrun: [--rank-filter RANKS] (note)")
      ->excludes("--rank-filter")
      ->type_name("RANKS")
      ->group(kGroup);
  refuse(app, "--logs-specs,--logs_specs", "--logs-specs",
         "trainrun loads no torchrun.logs_specs plugin; --output-filename DIR writes each rank's output to "
         "DIR/rank.NN/",
         "torchrun: refused (see --output-filename)");
}

// Supervision and placement: mapped, or no effect with a note.
void add_supervision(CLI::App& app, Options& o) {
  note_option<double>(app, o, "--monitor-interval,--monitor_interval",
                      "--monitor-interval: trainrun hears of a rank's exit when it happens (its host's agent "
                      "reports it at once); no effect",
                      "torchrun: accepted, no effect");
  app.add_option_function<std::string>(
         "--start-method,--start_method",
         [&o](const std::string&) {
           o.notes.push_back(
               "--start-method: every rank is a program of its own, started with fork and exec (as torchrun "
               "starts a program, whatever this says); no effect");
         },
         "torchrun: spawn, fork or forkserver; accepted, no effect")
      ->check(CLI::IsMember({"spawn", "fork", "forkserver"}))
      ->group(kGroup);
  note_option<std::string>(app, o, "--event-log-handler,--event_log_handler",
                           "--event-log-handler: trainrun records no torchelastic events; --report FILE writes "
                           "the job's JSON report",
                           "torchrun: accepted, no effect (see --report)");
  note_option<std::string>(app, o, "--signals-to-handle,--signals_to_handle",
                           "--signals-to-handle: trainrun's signals are fixed: SIGTERM, SIGINT and SIGHUP stop "
                           "every rank, SIGUSR1 and SIGUSR2 go to every rank, SIGQUIT prints their stacks",
                           "torchrun: accepted, no effect");
  app.add_option_function<std::string>(
         "--numa-binding,--numa_binding",
         [&o](const std::string& mode) {
           if (mode != "node" && mode != "socket") {
             throw CLI::ValidationError("--numa-binding", trainrun::cli::quoted(mode) +
                                                              " has no trainrun equivalent; --bind-to core gives "
                                                              "each rank a core of its own");
           }
           o.map_bind = mode == "node" ? "numa" : "socket";  // --bind-to, when given, wins
           o.notes.push_back("--numa-binding: trainrun binds the ranks, by local rank, to each " +
                             std::string(mode == "node" ? "NUMA node" : "socket") + " in turn (--bind-to " +
                             o.map_bind + "), not to the one nearest each rank's GPU");
         },
         "torchrun: node [--bind-to numa], socket [--bind-to socket] (note)")
      ->check(CLI::IsMember({"node", "socket", "exclusive", "core-complex"}))
      ->group(kGroup);
}

// --nnodes: N, or MIN:MAX (elastic), each at least 1 and MIN <= MAX.
CLI::Validator nnodes_value() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const std::size_t colon = text.find(':');
        const std::string bad = trainrun::cli::quoted(text) + " is not a number of nodes N or MIN:MAX";
        int min = 0, max = 0;
        const auto number = [](const std::string& part, int& value) {
          return !part.empty() && part.size() < 8 && part.find_first_not_of("0123456789") == std::string::npos &&
                 (value = std::stoi(part)) >= 1;
        };
        if (!number(text.substr(0, colon), min)) return bad;
        if (colon == std::string::npos) return "";
        if (!number(text.substr(colon + 1), max)) return bad;
        return min <= max ? "" : trainrun::cli::quoted(text) + ": MIN is larger than MAX";
      },
      "");
}

// One trainrun per node meeting at node 0 (cli/node), as torchrun's agents
// meet; torchrun's PET_* variables give what the command line does not, as
// torchrun reads them (Kubeflow's PyTorchJob sets them).
void add_per_node_launch(CLI::App& app, Options& o) {
  const char* group = "Per-node launch (one trainrun per node, as torchrun; man trainrun)";
  NodeOptions& n = o.node;
  app.add_option_function<std::string>(
         "--nnodes",
         [&o](const std::string& value) {
           const std::size_t colon = value.find(':');
           o.nnodes = std::stoi(value.substr(0, colon));
           o.max_nnodes = colon == std::string::npos ? 0 : std::stoi(value.substr(colon + 1));
         },
         "Nodes in the job. With -H/--hostfile it must match the hosts (MIN:MAX there: --min-np/--max-np "
         "of MIN and MAX hosts' ranks); without, one trainrun runs on each node (--node-rank, --master-addr), "
         "and MIN:MAX lets nodes join and leave (elastic)")
      ->check(nnodes_value())
      ->envname("PET_NNODES")
      ->type_name("N|MIN:MAX")
      ->group(group);
  app.add_option("--node-rank,--node_rank", n.node_rank,
                 "This node's rank, 0 to N-1; node 0 serves the job (default: assigned as nodes join)")
      ->check(CLI::Range(0, 1 << 20))
      ->envname("PET_NODE_RANK")
      ->group(group);
  app.add_option("--master-addr,--master_addr", n.master_addr, "Node 0's name or address (default 127.0.0.1)")
      ->envname("PET_MASTER_ADDR")
      ->type_name("HOST")
      ->group(group);
  app.add_option("--master-port,--master_port", n.master_port,
                 "Port node 0 serves the nodes on (default 29500); the ranks' own MASTER_PORT is another")
      ->check(CLI::Range(1, 65535))
      ->envname("PET_MASTER_PORT")
      ->group(group);
  app.add_option("--rdzv-backend,--rdzv_backend", n.rdzv_backend,
                 "static (--master-addr, --node-rank) or c10d (--rdzv-endpoint; node ranks in order of joining); "
                 "both are trainrun's own authenticated rendezvous")
      ->check(CLI::IsMember({"static", "c10d"}))
      ->envname("PET_RDZV_BACKEND")
      ->group(group);
  app.add_option("--rdzv-endpoint,--rdzv_endpoint", n.rdzv_endpoint,
                 "Node 0's HOST[:PORT] (default port 29400); the node whose address it is serves the job")
      ->envname("PET_RDZV_ENDPOINT")
      ->type_name("HOST[:PORT]")
      ->group(group);
  app.add_option("--rdzv-id,--rdzv_id", n.rdzv_id, "The job's name: nodes started with another are refused")
      ->envname("PET_RDZV_ID")
      ->type_name("ID")
      ->group(group);
  app.add_option("--rdzv-conf,--rdzv_conf", n.rdzv_conf,
                 "join_timeout=S: how long node 0 waits for the nodes (default 600); last_call_timeout=S: "
                 "with MIN:MAX, how long it waits past MIN for more (default 30); other keys: a note")
      ->envname("PET_RDZV_CONF")
      ->type_name("KEY=VALUE,...")
      ->group(group);
  app.add_option("--rdzv-secret-file", n.secret_file,
                 "A secret every node shares (also TRAINRUN_RDZV_SECRET): nodes and node 0 prove it to each "
                 "other; without one any process that reaches node 0's port may join, as with torchrun")
      ->type_name("FILE")
      ->group(group);
  app.add_option_function<std::string>(
         "--local-addr,--local_addr",
         [](const std::string&) {
           throw CLI::ValidationError("--local-addr",
                                      "trainrun finds each node's address on the route to node 0; give --network "
                                      "CIDR or --network-interface NAME");
         },
         "torchrun: refused (see --network, --network-interface)")
      ->type_name("VALUE")
      ->group(kGroup);
}

}  // namespace

void add_torchrun(CLI::App& app, Options& o) {
  add_shape(app, o);
  add_program(app, o);
  add_logs(app, o);
  add_supervision(app, o);
  add_per_node_launch(app, o);
}

std::string finish_nnodes_range(Options& o) {
  const bool hosts = !o.hosts.empty() || !o.hostfile.empty() || !o.discovery_script.empty();
  if (o.max_nnodes == 0 || !hosts) return "";  // one number, or a per-node launch (cli/node)
  const std::string range = "--nnodes " + std::to_string(o.nnodes) + ":" + std::to_string(o.max_nnodes);
  if (o.min_np > 0 || o.max_np > 0) return range + " and --min-np/--max-np say the same: give one of them";
  const int per_node = std::max(o.nproc_per_node, 1);
  o.min_np = o.nnodes * per_node;
  o.max_np = o.max_nnodes * per_node;
  o.notes.push_back(range + ": an elastic job of " + std::to_string(o.min_np) + " to " + std::to_string(o.max_np) +
                    " rank(s) (--min-np " + std::to_string(o.min_np) + " --max-np " + std::to_string(o.max_np) +
                    ") on the hosts given");
  o.nnodes = 0;  // the hosts' count is the elastic job's to decide
  o.max_nnodes = 0;
  return "";
}

std::string finish_torchrun(Options& o) {
  if (o.python_module && o.no_python && !o.run_path) {
    return "-m runs the module with python3 -m; it cannot be used with --no-python";
  }
  o.python_run = o.run_path        ? PythonRun::Script
                 : o.python_module ? PythonRun::Module
                 : o.no_python     ? PythonRun::Never
                                   : PythonRun::AsNeeded;
  if (o.run_path) {
    o.notes.push_back(std::string("--run-path: each rank runs ") + kPythonInterpreter +
                      " SCRIPT ARGS, a process of its own (torchrun: runpy.run_path in its worker)");
  }
  const bool files = !o.output_dir.empty();
  const std::string no_files = "no files without --log-dir DIR (--output-filename DIR)";
  if (!o.tee.empty() && o.tee != "0") {
    o.notes.push_back("--tee: " + (files ? "every rank's stdout and stderr go to the files and the console, "
                                           "whatever streams and ranks it names"
                                         : no_files + "; the console keeps every line"));
  }
  if (!o.redirects.empty() && o.redirects != "0") {
    o.notes.push_back("--redirects: " + (files ? "every rank's stdout and stderr go to the files" : no_files) +
                      ", and the console keeps every line too (--rank-filter chooses the ranks it shows)");
  }
  return "";
}

}  // namespace trainrun::cli
