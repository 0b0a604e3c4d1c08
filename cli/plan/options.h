// trainrun's command line: what the user asked for, parsed by CLI11 (the
// only translation unit that includes it; CLI11 costs ~15 s per TU).
#pragma once

#include <string>
#include <vector>

#include "cli/plan/node_options.h"
#include "cli/plan/program_path.h"
#include "cli/plan/rank_plan.h"
#include "cli/plan/remote_options.h"

namespace trainrun::cli {

struct Options {
  // Job
  int np = 0;  // 0: every slot of the hosts given
  bool local = false;
  std::string hosts;  // -H text
  std::string hostfile;
  std::vector<std::string> env_forward;  // -x NAME or NAME=VALUE, in order
  std::string backend;
  bool shm = true;              // --no-shm: TRAINRUN_SHM=0 for every rank
  bool check_calls = false;     // --check-calls: TRAINRUN_CHECK_CALLS=1 for every rank
  std::string switch_points;    // --switch-points: TRAINRUN_SWITCH_POINTS for every rank
  bool oversubscribe = false;   // more ranks than slots: round-robin over the hosts
  int nproc_per_node = 0;       // torchrun: ranks on every host (0: -np / the slots)
  int nnodes = 0;               // torchrun: how many hosts (0: those given); checked against -H
  int max_nnodes = 0;           // torchrun's --nnodes MIN:MAX: MAX (0: one number given)
  int slots_per_host = 0;       // horovodrun: slots of a host given without any (0: 1)
  int npernode = 0;             // mpirun: at most N ranks on each host (-npernode, -N, --map-by ppr:N:node)
  std::string npernode_option;  // how it was given, for messages: "-npernode 2", "--map-by ppr:2:node"
  std::string wdir;             // mpirun's -wdir: the ranks' working directory (empty: trainrun's)
  int ppr_socket = 0;           // mpirun's --map-by ppr:N:socket: N ranks on each socket here (cli/main.cc counts)
  // Placement (cli/plan/rank_plan.h, cli/agent/cpu_binding.h)
  std::string bind_to = "none";        // none | core | hwthread | socket | numa
  std::string map_by = "slot";         // slot | node
  std::string map_bind;                // --map-by core|hwthread|socket|numa|ppr:N:socket: --bind-to's default
  std::string mpirun_map_by = "slot";  // --map-by as given, for mpirun (--launcher mpirun)
  bool report_bindings = false;
  bool display_map = false;  // mpirun's --display-map: the rank map on stderr before the ranks start
  // Output
  std::string output_dir;
  bool tag_output = true;
  bool timestamp_output = false;  // each console line starts with the time it arrived
  bool merge_stderr = false;      // mpirun's --merge-stderr-to-stdout: the ranks' stderr goes with their stdout
  std::string rank_filter;
  // Supervision
  int start_timeout_s = 30;
  double timeout_s = 0;  // 0: no limit
  double grace_s = 5.0;
  // Elastic (cli/elastic): on when --min-np, --max-np or a discovery script is given.
  int min_np = 0;  // 0: -np
  int max_np = 0;  // 0: -np
  std::string discovery_script;
  int reset_limit = -1;  // -1: no limit; a non-elastic job: whole-job restarts (--max-restarts)
  double elastic_timeout_s = 600;
  double blacklist_cooldown_s = 0;     // 0: a failed host is not used again
  double elastic_hang_timeout_s = 30;  // a worker whose heartbeat stops this long is removed; 0: never
  bool elastic() const { return min_np > 0 || max_np > 0 || !discovery_script.empty(); }
  // Engine (lib/engine): forwarded to every rank as TRAINRUN_* variables;
  // negative or empty: not set, the library's default applies.
  double fusion_threshold_mb = -1;
  double cycle_time_ms = -1;
  int cache_capacity = -1;
  std::string timeline;
  bool timeline_mark_cycles = false;  // TRAINRUN_TIMELINE_MARK_CYCLES=1
  double stall_warning_s = -1;
  double stall_shutdown_s = -1;
  double straggler_warning_pct = -1;
  bool stacks_on_stall = false;  // every rank's stack at each stall warning (cli/report)
  // Report (cli/report): the JSON job report's file; empty: TRAINRUN_REPORT, else none.
  std::string report;
  // Information
  bool verbose = false;
  std::string log_level;           // horovodrun's --log-level: TRACE, DEBUG (= --verbose), ...
  std::vector<std::string> notes;  // what accepted compatibility options do instead (stderr)
  std::string config_file;         // horovodrun's YAML --config-file (cli/plan/config_file.h)
  bool dry_run = false;
  // --launcher mpirun (alias --mpi): hand the job to Open MPI's mpirun;
  // srun: agents as Slurm steps (cli/srun). Empty: srun inside a Slurm
  // allocation when no hosts are given, else local/SSH agents.
  std::string launcher;          // "" | "local" | "mpirun" | "srun"
  std::string mpi_args;          // extra mpirun arguments, split like a shell would
  std::string binding_args;      // horovodrun's --binding-args: more mpirun arguments (--launcher mpirun only)
  std::vector<std::string> mca;  // mpirun's --mca NAME VALUE, pairs in order (--launcher mpirun only)
  bool check_build = false;
  std::vector<std::string> command;  // program and its arguments, untouched
  RemoteOptions remote;              // SSH and network (multi-host)
  NodeOptions node;                  // per-node launch (cli/node)
  // A per-node launch's node 0: the nodes that joined, in node order, each
  // with the address it joined from; they replace -H (cli/node).
  std::vector<HostSlots> joined_hosts;
  // torchrun (cli/plan/torchrun_options.cc): --nproc-per-node auto|cpu|gpu,
  // counted here (cli/main.cc); -m, --run-path and --no-python, and how the
  // command runs from them; --tee and --redirects as given ("" or "0": none).
  std::string nproc_per_node_count;
  bool python_module = false;
  bool run_path = false;
  bool no_python = false;
  PythonRun python_run = PythonRun::AsNeeded;
  std::string tee;
  std::string redirects;
};

struct ParseResult {
  Options options;
  int exit_code = -1;  // >= 0: stop now with this status (help printed, or a usage error)
  // A usage error's line as printed ("trainrun: error: ..."); empty for the
  // help and the version. options.report then holds --report's FILE when
  // it was read (before an unknown option, or anywhere for a bad value).
  std::string error;
};

ParseResult parse_options(int argc, const char* const* argv);

}  // namespace trainrun::cli
