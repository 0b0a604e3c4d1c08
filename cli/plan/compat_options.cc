#include "cli/plan/compat_options.h"

#include <CLI/CLI.hpp>

#include "cli/plan/options.h"
#include "cli/plan/rank_count.h"

namespace trainrun::cli {
namespace {

constexpr const char* kGroup =
    "Compatibility (mpirun, horovodrun and torchrun spellings; trainrun's own name in brackets)";

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
}

// horovodrun's names; the engine's that match trainrun's are trainrun's own.
void add_horovodrun(CLI::App& app, Options& o) {
  app.add_option("--num-proc", o.np, "horovodrun: ranks [--np]")->check(rank_count())->group(kGroup);
  app.add_flag_callback(
         "--gloo", [&o] { o.backend = "gloo"; }, "horovodrun: [--backend gloo]")
      ->group(kGroup);
  app.add_option("--timeline-filename", o.timeline, "horovodrun: [--timeline FILE]")->group(kGroup);
  app.add_flag_callback(
         "--timeline-mark-cycles",
         [&o] {
           o.notes.push_back(
               "--timeline-mark-cycles: trainrun's timeline has no cycle markers; "
               "each op's negotiation and execution are its own events");
         },
         "horovodrun: accepted; the timeline shows each op's phases instead")
      ->group(kGroup);
  app.add_flag_callback(
         "--hierarchical-allreduce",
         [&o] {
           o.notes.push_back(
               "--hierarchical-allreduce: trainrun's gloo backend runs allreduces two-level by itself "
               "(shared memory within each host, TCP between hosts) when every host runs the same number "
               "of ranks, choosing the algorithm per size; --dry-run says which");
         },
         "horovodrun: accepted; trainrun goes two-level by itself (--dry-run says)")
      ->group(kGroup);
  app.add_flag_callback(
         "--hierarchical-allgather",
         [&o] {
           o.notes.push_back(
               "--hierarchical-allgather: trainrun's gloo backend runs allgathers two-level by itself when every "
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

// torchrun's names (torch.distributed.run); --max-restarts is trainrun's own (Elastic).
void add_torchrun(CLI::App& app, Options& o) {
  app.add_option("--nproc-per-node,--nproc_per_node", o.nproc_per_node,
                 "torchrun: ranks on every host; with -H/--hostfile each host gets this many [-H host:N], "
                 "-np is hosts x N")
      ->check(CLI::Range(1, 1 << 20))
      ->group(kGroup);
  app.add_option("--nnodes", o.nnodes, "torchrun: how many hosts; must match -H/--hostfile (one number, no MIN:MAX)")
      ->check(CLI::Range(1, 1 << 20))
      ->group(kGroup);
  app.add_flag("--standalone", o.local, "torchrun: one host, rendezvous here [--local]")->group(kGroup);
}

}  // namespace

void add_compat_options(CLI::App& app, Options& o) {
  add_mpirun(app, o);
  add_horovodrun(app, o);
  add_torchrun(app, o);
}

}  // namespace trainrun::cli
