#include "cli/plan/compat_options.h"

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/plan/options.h"
#include "cli/plan/printable.h"
#include "cli/plan/rank_count.h"
#include "cli/plan/torchrun_options.h"

namespace trainrun::cli {

constexpr const char* kGroup = kCompatGroup;

void note_flag(CLI::App& app, Options& o, const char* name, std::string note, const char* help) {
  app.add_flag_callback(
         name, [&o, note = std::move(note)] { o.notes.push_back(note); }, help)
      ->group(kGroup);
}

template <typename T>
void note_option(CLI::App& app, Options& o, const char* name, std::string note, const char* help) {
  app.add_option_function<T>(
         name, [&o, note = std::move(note)](const T&) { o.notes.push_back(note); }, help)
      ->group(kGroup);
}
template void note_option<int>(CLI::App&, Options&, const char*, std::string, const char*);
template void note_option<double>(CLI::App&, Options&, const char*, std::string, const char*);
template void note_option<std::string>(CLI::App&, Options&, const char*, std::string, const char*);

void default_flag(CLI::App& app, const char* name, const char* help) {
  app.add_flag_callback(
         name, [] {}, help)
      ->group(kGroup);
}

namespace {

// mpirun's ranks per host (-npernode, -N, --pernode, --map-by ppr:N:node):
// every spelling sets the same count; two that disagree are refused.
void set_per_node(Options& o, int n, const std::string& spelling) {
  if (!o.npernode_option.empty() && o.npernode != n) {
    throw CLI::ValidationError(spelling + " conflicts with " + o.npernode_option);
  }
  o.npernode = n;
  o.npernode_option = spelling;
}

// mpirun's -npernode N, -N N and --pernode: at most N ranks on each host
// (cli/plan/job_plan.cc places them).
void add_mpirun_per_node(CLI::App& app, Options& o) {
  app.add_option_function<int>(
         "--npernode", [&o](int n) { set_per_node(o, n, "-npernode " + std::to_string(n)); },
         "mpirun: N ranks on each host of -H/--hostfile (or here), also -npernode; -np, when given, may fill "
         "fewer [-H host:N]")
      ->check(rank_count())
      ->type_name("N")
      ->group(kGroup);
  app.add_option_function<int>(
         "-N", [&o](int n) { set_per_node(o, n, "-N " + std::to_string(n)); }, "mpirun: the same as -npernode N")
      ->check(rank_count())
      ->type_name("N")
      ->group(kGroup);
  app.add_flag_callback(
         "--pernode", [&o] { set_per_node(o, 1, "--pernode"); },
         "mpirun: one rank on each host, also -pernode (-npernode 1)")
      ->group(kGroup);
}

// mpirun's names for the job's size and hosts.
void add_mpirun(CLI::App& app, Options& o) {
  app.add_option("-n", o.np, "mpirun: ranks [--np]")->check(rank_count())->group(kGroup);
  app.add_option("--host", o.hosts, "mpirun: hosts and slots, also -host [-H, --hosts]")->group(kGroup);
  app.add_option("--machinefile", o.hostfile, "mpirun: file of hosts, also -machinefile, -hostfile [--hostfile]")
      ->group(kGroup);
  app.add_flag("--oversubscribe", o.oversubscribe,
               "mpirun: more ranks than slots, the extra ones round-robin over the hosts (without it, "
               "-np above the slots is refused)")
      ->group(kGroup);
  note_flag(app, o, "--allow-run-as-root",
            "--allow-run-as-root: trainrun runs as root without it (under --launcher mpirun it gives mpirun the "
            "flag itself); no effect",
            "mpirun: accepted; trainrun needs no such flag");
  add_mpirun_per_node(app, o);
  // Open MPI's parameters, NAME VALUE: for mpirun (cli/plan/options.cc).
  app.add_option("--mca,--gmca", o.mca,
                 "mpirun: NAME VALUE, an Open MPI parameter, also -mca, -gmca, repeatable: given to mpirun under "
                 "--launcher mpirun, else a note")
      ->expected(2)
      ->delimiter('\x1f')  // the scan hands both values over as one (cli/plan/argv_scan.h); VALUE may hold commas
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->type_name("WORD")
      ->group(kGroup);
  app.add_flag("--merge-stderr-to-stdout", o.merge_stderr,
               "mpirun: each rank's stderr goes where its stdout goes (the console's stdout, its stdout file)")
      ->group(kGroup);
  app.add_flag("--display-map", o.display_map,
               "mpirun: print the rank map (--dry-run's table without the commands) on stderr, then run")
      ->group(kGroup);
  app.add_option("--wdir,--wd", o.wdir,
                 "mpirun: the ranks' working directory, also -wdir, -wd (default: trainrun's; relative to it)")
      ->type_name("DIR")
      ->group(kGroup);
}

// horovodrun's names; the engine's that match trainrun's are trainrun's own.
void add_horovodrun(CLI::App& app, Options& o) {
  app.add_option("--num-proc", o.np, "horovodrun: ranks [--np]")->check(rank_count())->group(kGroup);
  app.add_flag_callback(
         "--gloo", [&o] { o.backend = "tcp"; }, "horovodrun: [--backend tcp]")
      ->group(kGroup);
  app.add_option("--timeline-filename", o.timeline, "horovodrun: [--timeline FILE]")->group(kGroup);
  app.add_flag("--timeline-mark-cycles,!--no-timeline-mark-cycles", o.timeline_mark_cycles,
               "horovodrun: a CYCLE_START mark in the --timeline at every engine cycle")
      ->group(kGroup);
  app.add_flag_callback(
         "--hierarchical-allreduce",
         [&o] {
           o.notes.push_back(
               "--hierarchical-allreduce: trainrun's tcp backend runs allreduces two-level by itself "
               "(shared memory within each host, TCP between hosts) when every host runs the same number "
               "of ranks, choosing the algorithm per size; --dry-run says which");
         },
         "horovodrun: accepted; trainrun goes two-level by itself (--dry-run says)")
      ->group(kGroup);
  app.add_flag_callback(
         "--hierarchical-allgather",
         [&o] {
           o.notes.push_back(
               "--hierarchical-allgather: trainrun's tcp backend runs allgathers two-level by itself when every "
               "host runs the same number of ranks");
         },
         "horovodrun: accepted; trainrun goes two-level by itself")
      ->group(kGroup);
  add_float(app, "--stall-check-warning-time-seconds", o.stall_warning_s, "horovodrun: [--stall-warning]", 0.0, 1e9)
      ->group(kGroup);
  add_float(app, "--stall-check-shutdown-time-seconds", o.stall_shutdown_s, "horovodrun: [--stall-shutdown]", 0.0, 1e9)
      ->group(kGroup);
  app.add_flag_callback(
         "--no-stall-check", [&o] { o.stall_warning_s = o.stall_shutdown_s = 0; },
         "horovodrun: [--stall-warning 0 --stall-shutdown 0]")
      ->group(kGroup);
  app.add_option("--network-interfaces", o.remote.network_interface,
                 "horovodrun: one interface name [--network-interface]")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            return text.find(',') == std::string::npos ? ""
                                                       : "trainrun uses one interface on every host; give one name";
          },
          "NAME"))
      ->group(kGroup);
  app.add_option("--log-level", o.log_level, "horovodrun: TRACE or DEBUG: [--verbose]; others: the default")
      ->transform(CLI::IsMember({"TRACE", "DEBUG", "INFO", "WARNING", "ERROR", "FATAL"}, CLI::ignore_case))
      ->group(kGroup);
  app.add_flag("--prefix-output-with-timestamp", o.timestamp_output,
               "horovodrun: time-stamp each console line [--timestamp-output]")
      ->group(kGroup);
  app.add_flag("--cb", o.check_build, "horovodrun: also -cb [--check-build]")->group(kGroup);
  app.add_option("--config-file", o.config_file,
                 "horovodrun: YAML file of settings (params, timeline, stall_check, logging, ...); "
                 "the command line wins")
      ->type_name("FILE")
      ->group(kGroup);
}

// horovodrun's elastic, logging and library flags: mapped where trainrun
// has the setting, else accepted with a note.
void add_horovodrun_settings(CLI::App& app, Options& o) {
  app.add_option("--slots-per-host", o.slots_per_host,
                 "horovodrun: slots of each host given without any (-H, --hostfile, discovery script)")
      ->check(CLI::Range(1, 65536))  // as a host's slots (cli/plan/host_list.h)
      ->group(kGroup);
  app.add_option_function<std::vector<double>>(
         "--blacklist-cooldown-range",
         [&o](const std::vector<double>& range) {
           if (!(range[0] >= 0 && range[0] <= range[1] && range[1] <= 1e9)) {
             throw CLI::ValidationError("--blacklist-cooldown-range", "needs MIN MAX seconds with 0 <= MIN <= MAX");
           }
           o.blacklist_cooldown_s = range[0];
           o.notes.push_back(
               "--blacklist-cooldown-range: trainrun's cooldown is one fixed time; a failed host is "
               "used again after MIN seconds (--blacklist-cooldown MIN)");
         },
         "horovodrun: MIN MAX seconds [--blacklist-cooldown MIN]")
      ->expected(2)
      ->delimiter(',')  // the scan hands both values over as one "MIN,MAX" (cli/plan/argv_scan.h)
      ->allow_extra_args(false)
      ->group(kGroup);
  // Whole seconds, as the ranks read TRAINRUN_COLLECTIVE_TIMEOUT (contract/world.cc).
  app.add_option_function<long long>(
         "--gloo-timeout-seconds",
         [&o](long long s) { o.env_forward.push_back("TRAINRUN_COLLECTIVE_TIMEOUT=" + std::to_string(s)); },
         "horovodrun: whole seconds a collective may block [-x TRAINRUN_COLLECTIVE_TIMEOUT=S]")
      ->check(CLI::Range(1LL, 30LL * 86400))
      ->group(kGroup);
  note_flag(app, o, "--disable-cache",
            "--disable-cache: trainrun checks the hosts at every launch and caches nothing; no effect",
            "horovodrun: accepted; trainrun caches no host checks");
  default_flag(app, "--stall-check", "horovodrun: stall warnings on (the default)");
  for (const char* name : {"--log-with-timestamp", "--no-log-hide-timestamp"}) {
    app.add_flag_callback(
           name,
           [&o, name] {
             o.timestamp_output = true;
             o.notes.push_back(std::string(name) +
                               ": trainrun's own messages carry no time; every console line is time-stamped "
                               "instead (--timestamp-output)");
           },
           "horovodrun: [--timestamp-output]")
        ->group(kGroup);
  }
  for (const char* name : {"--log-without-timestamp", "--log-hide-timestamp"}) {
    default_flag(app, name, "horovodrun: trainrun's messages carry no time (the default)");
  }
  note_flag(app, o, "--autotune",
            "--autotune: trainrun has no autotuner; set --fusion-threshold-mb and --cycle-time-ms",
            "horovodrun: accepted; trainrun has no autotuner");
  default_flag(app, "--no-autotune", "horovodrun: no autotuner (the default)");
  const std::string no_autotune = ": trainrun has no autotuner; no effect";
  note_option<std::string>(app, o, "--autotune-log-file", "--autotune-log-file" + no_autotune,
                           "horovodrun: accepted, no effect");
  for (const char* name :
       {"--autotune-warmup-samples", "--autotune-steps-per-sample", "--autotune-bayes-opt-max-samples"}) {
    note_option<int>(app, o, name, name + no_autotune, "horovodrun: accepted, no effect");
  }
  note_option<double>(app, o, "--autotune-gaussian-process-noise", "--autotune-gaussian-process-noise" + no_autotune,
                      "horovodrun: accepted, no effect");
}

// horovodrun's choices of algorithm and MPI tuning.
void add_horovodrun_tuning(CLI::App& app, Options& o) {
  note_flag(app, o, "--torus-allreduce",
            "--torus-allreduce: trainrun has no torus allreduce; its tcp backend goes two-level by itself when "
            "every host runs the same number of ranks (--dry-run says)",
            "horovodrun: accepted; trainrun chooses two-level allreduces itself");
  default_flag(app, "--no-torus-allreduce", "horovodrun: no torus allreduce (the default)");
  note_flag(app, o, "--no-hierarchical-allreduce",
            "--no-hierarchical-allreduce: trainrun's tcp backend chooses the two-level allreduce by itself "
            "(--dry-run says which); it cannot be turned off",
            "horovodrun: accepted; trainrun chooses two-level allreduces itself");
  default_flag(app, "--no-hierarchical-allgather", "horovodrun: no hierarchical allgather (the default)");
  default_flag(app, "--mpi-threads-disable", "horovodrun: MPI without MPI_THREAD_MULTIPLE (the default)");
  app.add_flag_callback(
         "--no-mpi-threads-disable", [&o] { o.env_forward.push_back("TRAINRUN_MPI_THREADS=multiple"); },
         "horovodrun: MPI_THREAD_MULTIPLE [-x TRAINRUN_MPI_THREADS=multiple]")
      ->group(kGroup);
  note_flag(app, o, "--tcp",
            "--tcp: trainrun's data path between hosts is TCP already; ranks on one host share memory "
            "(--no-shm: TCP there too)",
            "horovodrun: accepted; TCP is trainrun's only path between hosts");
  app.add_option("--binding-args", o.binding_args,
                 "horovodrun: binding arguments for mpirun (with --launcher mpirun; else --bind-to)")
      ->group(kGroup);
  note_option<int>(app, o, "--thread-affinity",
                   "--thread-affinity: trainrun does not pin its engine thread (--bind-to pins each rank); no effect",
                   "horovodrun: accepted, no effect (see --bind-to)");
  note_option<int>(app, o, "--num-nccl-streams",
                   "--num-nccl-streams: trainrun uses one NCCL stream per communicator; no effect",
                   "horovodrun: accepted, no effect");
  app.add_flag_callback(
         "--jsrun",
         [] {
           throw CLI::ValidationError("--jsrun",
                                      "LSF's jsrun is not supported; trainrun starts ranks over SSH (-H), in Slurm "
                                      "(srun) or with Open MPI (--launcher mpirun)");
         },
         "horovodrun: refused (LSF's jsrun is not supported)")
      ->group(kGroup);
}

// One --map-by value: where ranks go, and for core, hwthread, socket, numa
// and ppr:N:socket the unit each rank is bound to unless --bind-to says
// otherwise (Open MPI's defaults). A bad one is refused naming it.
void map_by(Options& o, const std::string& value) {
  o.mpirun_map_by = value;
  if (value == "slot" || value == "node") {
    o.map_by = value;
    return;
  }
  for (const char* unit : {"core", "hwthread", "socket", "numa"}) {
    if (value == unit) {
      o.map_by = "slot";
      o.map_bind = value;
      return;
    }
  }
  // ppr:N:node and ppr:N:socket, N a number of ranks
  const std::size_t colon = value.find(':', 4);
  if (value.rfind("ppr:", 0) == 0 && colon != std::string::npos) {
    std::string count = value.substr(4, colon - 4);
    const std::string object = value.substr(colon + 1);
    if ((object == "node" || object == "socket") && rank_count()(count).empty()) {
      if (object == "node") return set_per_node(o, std::stoi(count), "--map-by " + value);
      if (!o.npernode_option.empty()) {
        throw CLI::ValidationError("--map-by " + value + " conflicts with " + o.npernode_option);
      }
      o.ppr_socket = std::stoi(count);  // cli/main.cc counts the sockets
      o.npernode_option = "--map-by " + value;
      o.map_bind = "socket";
      return;
    }
  }
  throw CLI::ValidationError("--map-by", trainrun::cli::quoted(value) +
                                             " is not slot, node, core, hwthread, socket, numa, ppr:N:node or "
                                             "ppr:N:socket");
}

}  // namespace

void add_compat_options(CLI::App& app, Options& o) {
  add_mpirun(app, o);
  add_horovodrun(app, o);
  add_horovodrun_settings(app, o);
  add_horovodrun_tuning(app, o);
  add_torchrun(app, o);
}

void add_map_by(CLI::App& app, Options& o, const char* group) {
  app.add_option_function<std::string>(
         "--map-by", [&o](const std::string& value) { map_by(o, value); },
         "slot: fill each host's slots in turn (default); node: one rank per host in turn; core, hwthread, "
         "socket, numa: slot, each rank bound to its own such unit (--bind-to overrides); ppr:N:node: N ranks on "
         "each host (mpirun's -npernode N); ppr:N:socket: N on each socket of this machine, bound to it")
      ->type_name("HOW")
      ->group(group);
}

}  // namespace trainrun::cli
