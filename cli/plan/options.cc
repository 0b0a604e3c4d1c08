#include "cli/plan/options.h"

#include <CLI/CLI.hpp>
#include <cmath>
#include <iostream>

#include "cli/plan/argv_scan.h"
#include "cli/plan/compat_options.h"
#include "cli/plan/config_file.h"
#include "cli/plan/rank_count.h"
#include "cli/plan/host_list.h"
#include "cli/plan/printable.h"
#include "cli/plan/shell_words.h"
#include "cli/plan/torchrun_options.h"
#include "contract/switch_points.h"
#include "contract/world.h"
#include "trainrun/version.h"

namespace trainrun::cli {
namespace {

constexpr std::size_t kMessageBytes = 512;  // of a CLI11 message, which may quote the value

constexpr const char* kDescription =
    "trainrun: start a distributed training job and supervise it.\n\n"
    "  trainrun --local -np 4 ./train [args...]\n"
    "  trainrun -np 8 -H localhost:8 ./train\n"
    "  trainrun --launcher mpirun -np 4 ./train\n"
    "  salloc -N 2 -n 8 trainrun ./train        inside Slurm: srun starts the agents\n"
    "  trainrun --nnodes 2 --node-rank 0 --master-addr h1 --nproc-per-node 4 ./train\n"
    "                                           one trainrun per node, as torchrun\n"
    "  trainrun doctor -H h1,h2 [./train]      check hosts without starting ranks\n"
    "Options come before the program; everything from the program name on is\n"
    "passed to the program untouched. man trainrun has every option and exit code.\n";

}  // namespace

CLI::Option* add_float(CLI::App& app, const char* name, double& value, const char* description, double min,
                       double max) {
  const CLI::Validator finite(
      [](std::string& text) -> std::string {
        double parsed = 0;
        if (CLI::detail::lexical_cast(text, parsed) && !std::isfinite(parsed)) {
          return "Value " + text + " is not a finite number";
        }
        return "";
      },
      "", "FINITE");
  return app.add_option(name, value, description)->check(finite)->check(CLI::Range(min, max));
}

namespace {

// Multi-host: SSH and network choices (cli/plan/remote_options.h).
void add_remote_options(CLI::App& app, RemoteOptions& r) {
  const char* group = "Multi-host";
  app.add_option("-p,--ssh-port", r.ssh_port, "SSH port of every host (default: ~/.ssh/config, else 22)")
      ->check(CLI::Range(1, 65535))
      ->group(group);
  app.add_option("-i,--ssh-identity-file", r.ssh_identity_file,
                 "Private key to try first (then ssh-agent and ~/.ssh keys)")
      ->group(group);
  app.add_option("--ssh-connect-timeout", r.ssh_connect_timeout_s,
                 "Seconds to connect to and log in to each host (default 10)")
      ->check(CLI::Range(1, 3600))
      ->group(group);
  app.add_flag("--ssh-accept-new", r.ssh_accept_new,
               "Add unknown host keys to known_hosts (a changed key is always refused)")
      ->group(group);
  app.add_option("--remote-trainrun", r.remote_trainrun,
                 "trainrun on the other hosts (default: this binary's absolute path)")
      ->group(group);
  auto* network =
      app.add_option("--network", r.network, "Network the job uses, e.g. 10.1.0.0/16 (default: the route to the hosts)")
          ->group(group);
  app.add_option("--network-interface", r.network_interface, "Interface the job uses, the same name on every host")
      ->excludes(network)
      ->group(group);
  app.add_option("--tree-radix", r.tree_radix,
                 "Start agents as a tree: trainrun reaches K hosts, each of them the next K (default: a tree of 64 "
                 "above 128 hosts)")
      ->check(CLI::Range(1, 65536))
      ->group(group);
}

// Where ranks go and which CPUs they may use (cli/plan/rank_plan.h, cli/agent/cpu_binding.h).
// --switch-points: checked here with the grammar the ranks use
// (contract/switch_points.h), so a bad one stops the launch.
void add_switch_points_option(CLI::App& app, Options& o, const char* group) {
  app.add_option("--switch-points", o.switch_points,
                 "Where allreduce and reducescatter across hosts change algorithm, overriding the cost model: "
                 "two-level=SIZE|never,leader=SIZE|never,split=SIZE,reducescatter-split=SIZE,chunk=SIZE (sets "
                 "TRAINRUN_SWITCH_POINTS; --verbose prints them)")
      ->check(CLI::Validator(
          [](std::string& spec) {
            std::string error;
            return detail::switch_points(2, 2, spec, error) ? std::string() : error;
          },
          "SPEC"))
      ->group(group);
}

void add_placement_options(CLI::App& app, Options& o) {
  const char* placement = "Placement (also mpirun's names)";
  add_map_by(app, o, placement);
  app.add_option("--bind-to", o.bind_to,
                 "Pin each rank, by local rank, to its own core, hardware thread, socket or NUMA node of its host "
                 "(default none)")
      ->check(CLI::IsMember({"none", "core", "hwthread", "socket", "numa"}))
      ->group(placement);
  app.add_flag("--report-bindings", o.report_bindings,
               "Print one line per rank: its host and the cores and CPUs it may run on")
      ->group(placement);
}

void add_elastic_options(CLI::App& app, Options& o) {
  const char* elastic = "Elastic (survive failures, grow with new hosts)";
  app.add_option("--min-np,--min-num-proc", o.min_np,
                 "Fewest ranks the job may go on with (default -np); enables elastic mode")
      ->check(rank_count())
      ->group(elastic);
  app.add_option("--max-np,--max-num-proc", o.max_np,
                 "Most ranks the job may grow to (default -np); enables elastic mode")
      ->check(rank_count())
      ->group(elastic);
  app.add_option("--host-discovery-script", o.discovery_script,
                 "Program printing the usable hosts as 'host:slots' lines, run every second "
                 "(instead of -H); enables elastic mode")
      ->type_name("PATH")
      ->group(elastic);
  app.add_option("--reset-limit,--max-restarts,--max_restarts", o.reset_limit,
                 "Elastic job: membership changes after which it gives up (default: no limit). Other jobs "
                 "(torchrun's --max-restarts, --max_restarts): restart every rank after a failure, at most N times "
                 "(default 0)")
      ->check(CLI::Range(0, 1 << 20))
      ->envname("PET_MAX_RESTARTS")
      ->group(elastic);
  add_float(app, "--elastic-timeout", o.elastic_timeout_s,
            "Seconds to wait for --min-np slots before giving up (default 600)", 0.001, 1e9)
      ->group(elastic);
  add_float(app, "--elastic-hang-timeout", o.elastic_hang_timeout_s,
            "Seconds a worker's process may be stopped or frozen (no heartbeat) before it is killed and the "
            "others re-form without it, and ranks may be stuck before a network partition they report is "
            "resolved (the larger side goes on); 0: never (default 30)",
            0.0, 1e9)
      ->group(elastic);
  add_float(app, "--blacklist-cooldown", o.blacklist_cooldown_s,
            "Seconds before a failed host is used again; 0: never (default)", 0.0, 1e9)
      ->group(elastic);
}

void add_engine_options(CLI::App& app, Options& o) {
  const char* engine = "Engine (async named collectives)";
  add_float(app, "--fusion-threshold-mb", o.fusion_threshold_mb,
            "Fuse small allreduces into buffers up to this many MiB; 0: no fusion (default 64)", 0.0, 1e6)
      ->group(engine);
  add_float(app, "--cycle-time-ms", o.cycle_time_ms, "Engine negotiation cycle while ops keep coming (default 1)", 0.01,
            60000.0)
      ->group(engine);
  app.add_option("--cache-capacity", o.cache_capacity, "Engine response cache entries; 0: off (default 1024)")
      ->check(CLI::Range(0, 1 << 20))
      ->group(engine);
  app.add_option("--timeline", o.timeline, "Write a Chrome-trace timeline of engine ops to FILE (rank 0)")
      ->group(engine);
  add_float(app, "--stall-warning", o.stall_warning_s,
            "Warn about ops some ranks have not submitted after S seconds; 0: never (default 60)", 0.0, 1e9)
      ->group(engine);
  add_float(app, "--stall-shutdown", o.stall_shutdown_s,
            "Fail stalled ops on every rank after S seconds; 0: never (default)", 0.0, 1e9)
      ->group(engine);
  add_float(app, "--straggler-warning", o.straggler_warning_pct,
            "Warn when one rank submits last in more than PCT% of a window's engine cycles; 0: never (default)", 0.0,
            100.0)
      ->type_name("PCT")
      ->group(engine);
  app.add_flag("--stacks-on-stall", o.stacks_on_stall,
               "Print every rank's stack at each stall warning too (always: SIGQUIT, --timeout, stall shutdown)")
      ->group(engine);
}

void add_output_options(CLI::App& app, Options& o) {
  const char* output = "Output";
  app.add_option("--output-filename", o.output_dir,
                 "Also write each rank's output to DIR/rank.NN/stdout and stderr (a file that "
                 "cannot be written is named once on stderr; the console keeps every line)")
      ->group(output);
  app.add_flag("--tag-output,!--no-tag-output", o.tag_output, "Prefix each line with [rank] (on by default)")
      ->group(output);
  app.add_flag("--timestamp-output", o.timestamp_output,
               "Prefix each console line with the local time it arrived (before the [rank] tag)")
      ->group(output);
  app.add_option("--rank-filter", o.rank_filter, "Only these ranks' output reaches the console, e.g. 0 or 0,2-3")
      ->group(output);
}

void build(CLI::App& app, Options& o) {
  app.description(kDescription);
  app.prefix_command();  // everything from the program name on belongs to the program
  app.set_version_flag("--version", std::string("trainrun ") + kVersion);
  app.get_formatter()->column_width(34);

  const char* job = "Job";
  app.add_option("--np", o.np, "Number of ranks (also -np); default: every slot of -H/--hostfile")
      ->check(rank_count())
      ->group(job);
  app.add_flag("--local", o.local, "Run every rank on this machine (the default without -H)")->group(job);
  app.add_option("-H,--hosts", o.hosts, "Hosts and slots: host[:slots],user@host[:slots],[ipv6]:slots")->group(job);
  app.add_option("--hostfile", o.hostfile, "File of hosts, one per line: 'host slots=N' or 'host:N'")->group(job);
  app.add_option("-x,--env", o.env_forward, "Forward NAME (or set NAME=VALUE) for every rank; repeatable")
      ->allow_extra_args(false)
      ->group(job);
  app.add_option("--backend", o.backend,
                 "Collective backend for the ranks: tcp (trainrun's own TCP and shared memory; gloo is its former "
                 "name), mpi or nccl")
      ->check(CLI::IsMember({"tcp", "gloo", "mpi", "nccl"}))
      ->transform([](const std::string& name) { return detail::canonical_backend(name); })
      ->group(job);
  app.add_flag_callback(
         "--no-shm", [&o] { o.shm = false; },
         "Ranks on one host talk over TCP instead of shared memory (sets TRAINRUN_SHM=0)")
      ->group(job);
  add_switch_points_option(app, o, job);
  app.add_flag("--check-calls", o.check_calls,
               "Check before each core call that every rank makes the same one (op, dtype, count, reduce op, "
               "root) and fail naming the rank that differs; costs one small allgather per call over TCP "
               "(sets TRAINRUN_CHECK_CALLS=1; shared memory always checks)")
      ->group(job);

  add_placement_options(app, o);

  add_output_options(app, o);

  const char* launchers = "Launch through Open MPI or Slurm";
  app.add_option("--launcher", o.launcher,
                 "How ranks start: local (local/SSH agents), mpirun, or srun (agents as Slurm steps; "
                 "the default inside an allocation without -H/--hostfile/--local)")
      ->check(CLI::IsMember({"local", "mpirun", "srun"}))
      ->group(launchers);
  app.add_flag_callback(
         "--mpi", [&o] { o.launcher = "mpirun"; }, "Same as --launcher mpirun")
      ->group(launchers);
  app.add_option("--mpi-args", o.mpi_args, "Extra mpirun arguments, one string split like a shell would")
      ->group(launchers);

  const char* control = "Supervision";
  app.add_option("--start-timeout", o.start_timeout_s,
                 "Seconds every rank may take to reach the rendezvous (default 30)")
      ->check(CLI::Range(1, 86400))
      ->group(control);
  add_float(app, "--timeout", o.timeout_s, "Stop the job after this many seconds (exit 124)", 0.001, 1e9)
      ->group(control);
  add_float(app, "--grace", o.grace_s, "Seconds between SIGTERM and SIGKILL on teardown (default 5)", 0.0, 3600.0)
      ->group(control);

  add_remote_options(app, o.remote);

  add_elastic_options(app, o);
  add_engine_options(app, o);

  const char* info = "Information";
  app.add_flag("--verbose", o.verbose, "Print what trainrun decides and does")->group(info);
  app.add_option("--report", o.report,
                 "Write a JSON job report to FILE on every outcome (also TRAINRUN_REPORT; man trainrun); "
                 "output that cannot be written never changes the exit status")
      ->type_name("FILE")
      ->group(info);
  app.add_flag("--dry-run", o.dry_run, "Print the rank map and each rank's command, start nothing")->group(info);
  app.add_flag("--check-build", o.check_build, "Print the built backends and their versions")->group(info);

  add_compat_options(app, o);  // last in --help
}

// Every name CLI11 knows, for the scan of argv before it (cli/plan/argv_scan.h).
OptionNames option_names(const CLI::App& app) {
  OptionNames names;
  for (const CLI::Option* opt : app.get_options()) {
    if (opt == app.get_help_ptr()) continue;  // only "-h" and "--help" (cli/plan/argv_scan.h)
    const int values = opt->get_items_expected_min();
    for (const std::string& name : opt->get_lnames()) {
      names.long_names[name] = values;
      if (values > 1 && opt->get_delimiter() != '\0') names.delimiters[name] = opt->get_delimiter();
    }
    for (const std::string& name : opt->get_snames()) names.short_names[name[0]] = values > 0;
    for (const std::string& name : opt->get_fnames()) names.long_names.emplace(name, 0);
  }
  return names;
}

}  // namespace

namespace {

// Prints a usage error's line and makes `result` stop with status 2.
ParseResult& usage_error(ParseResult& result, const std::string& line) {
  std::cerr << line << "\n";
  result.error = line;
  result.exit_code = 2;
  return result;
}

// The --report FILE that CLI11 read, whether or not the rest of the command
// line parsed ("" when none): a usage error's report goes there.
std::string report_read(const CLI::App& app) {
  const CLI::Option* report = app.get_option_no_throw("--report");
  return report && !report->results().empty() ? report->results().back() : "";
}

// --report's FILE among the options before the one the scan refused, or "".
std::string report_before(const ArgvScan& scan) {
  CLI::App app("trainrun", "trainrun");
  Options unused;
  build(app, unused);
  std::vector<std::string> before(scan.args.begin(), scan.args.begin() + static_cast<std::ptrdiff_t>(scan.error_at));
  std::reverse(before.begin(), before.end());  // CLI11 2.1 parses a reversed vector
  try {
    app.parse(before);
  } catch (const CLI::Error&) {  // what it read before the error stays read
  }
  return report_read(app);
}

// CLI11 over `args` (scanned, in order) into `result`; false when parsing
// stopped, with result.exit_code set (the help, the version, an error).
// `config`, when given, made some of `args`: an error about an option it
// set names the file and the YAML key instead ("--config-file F:
// stall_check.warning_time_seconds: Value -5 not in range ...").
bool parse_args(CLI::App& app, std::vector<std::string> args, ParseResult& result, const ConfigTokens* config = nullptr,
                const std::string& config_path = "") {
  std::reverse(args.begin(), args.end());  // CLI11 2.1 parses a reversed vector
  try {
    app.parse(args);
    return true;
  } catch (const CLI::CallForHelp& e) {
    result.exit_code = app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    result.exit_code = app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line, like every usage error (the help is only ever -h/--help).
    std::string what = e.what();
    const std::string option = what.substr(0, what.find(':'));
    const std::string key = config && option.rfind("--", 0) == 0 ? config_key_of(*config, option) : "";
    usage_error(result, !key.empty() ? "trainrun: error: --config-file " + printable(config_path) + ": " + key +
                                           printable(what.substr(option.size()), kMessageBytes)
                                     : "trainrun: error: " + printable(what, kMessageBytes) + " (see trainrun --help)");
    result.options.report = report_read(app);
  }
  return false;
}

// horovodrun's --binding-args and mpirun's --mca: for mpirun under
// --launcher mpirun, else a note each. Why they cannot be, or "".
std::string for_mpirun(Options& o) {
  if (!o.binding_args.empty()) {  // horovodrun hands them to mpirun
    if (o.launcher == "mpirun") o.mpi_args += (o.mpi_args.empty() ? "" : " ") + o.binding_args;
    else
      o.notes.push_back(
          "--binding-args: mpirun's arguments; no effect without --launcher mpirun (--bind-to pins ranks)");
  }
  if (o.mca.size() % 2) return "--mca " + printable(o.mca.back()) + ": no value (--mca NAME VALUE)";
  if (o.mca.empty() || o.launcher == "mpirun") return "";  // cli/mpirun/mpirun_command.h
  std::string given;
  for (std::size_t i = 0; i < o.mca.size(); i += 2) {
    given += (i ? " --mca " : "--mca ") + display_quote(o.mca[i]) + " " + display_quote(o.mca[i + 1]);
  }
  o.notes.push_back(given +
                    ": Open MPI's parameters go to mpirun under --launcher mpirun; trainrun's own launcher starts "
                    "no mpirun, so no effect (-x OMPI_MCA_NAME=VALUE gives one to ranks that use Open MPI)");
  return "";
}

// After a successful parse: the checks CLI11 cannot make, the program, the notes.
ParseResult finish(const CLI::App& app, ParseResult result) {
  // An empty -H or --hostfile is a mistake, not "no hosts given".
  Options& o = result.options;
  std::string empty;
  if ((app.count("--hosts") || app.count("--host")) && o.hosts.empty()) empty = parse_host_option("").error;
  if ((app.count("--hostfile") || app.count("--machinefile")) && o.hostfile.empty()) {
    empty = "--hostfile: empty file name";
  }
  if (app.count("--wdir") && o.wdir.empty()) empty = "-wdir: empty directory name";
  if (!empty.empty()) return usage_error(result, "trainrun: error: " + empty);
  std::vector<std::string> command = app.remaining();
  if (!command.empty() && command.front() == "--") command.erase(command.begin());
  else if (!command.empty() && command.front().size() > 1 && command.front()[0] == '-') {
    return usage_error(result, "trainrun: error: unknown option " + cli::quoted(command.front()) +
                                   " (trainrun --help lists every option)");
  }
  o.command = std::move(command);
  if (const std::string why = finish_nnodes_range(o); !why.empty())
    return usage_error(result, "trainrun: error: " + why);
  // Elastic jobs place ranks themselves (cli/elastic): refused, never ignored.
  const std::string elastic_refuses = o.map_by == "node" ? "--map-by node"
                                      : o.oversubscribe  ? "--oversubscribe"
                                                         : o.npernode_option;
  if (o.elastic() && (!elastic_refuses.empty() || o.remote.tree_radix > 0)) {
    const bool tree = elastic_refuses.empty();
    return usage_error(result, "trainrun: error: " + (tree ? std::string("--tree-radix") : elastic_refuses) +
                                   " cannot be used in an elastic job (--min-np, --max-np, --host-discovery-script): " +
                                   (tree ? "an elastic job reaches every host itself"
                                         : "elastic jobs fill each host's slots in order"));
  }
  for (const char* option : {"--elastic-hang-timeout", "--elastic-timeout"}) {
    if (!o.elastic() && app.count(option)) {
      o.notes.push_back(std::string(option) +
                        ": only elastic jobs (--min-np, --max-np, --host-discovery-script) use it; no effect");
    }
  }
  if (!o.map_bind.empty() && !app.count("--bind-to")) o.bind_to = o.map_bind;  // --map-by core binds to cores
  if (o.log_level == "TRACE" || o.log_level == "DEBUG") o.verbose = true;
  if (const std::string why = for_mpirun(o); !why.empty()) return usage_error(result, "trainrun: error: " + why);
  if (const std::string why = finish_torchrun(o); !why.empty()) return usage_error(result, "trainrun: error: " + why);
  for (const std::string& note : o.notes) std::cerr << "trainrun: note: " << note << "\n";
  return result;
}

}  // namespace

ParseResult parse_options(int argc, const char* const* argv) {
  ParseResult result;
  CLI::App app("trainrun", "trainrun");
  build(app, result.options);
  ArgvScan scan = scan_options(std::vector<std::string>(argv + 1, argv + argc), option_names(app));
  if (!scan.error.empty()) {
    result.options.report = report_before(scan);
    return usage_error(result, "trainrun: error: " + scan.error);
  }
  if (!parse_args(app, scan.args, result)) return result;
  if (result.options.config_file.empty()) return finish(app, std::move(result));

  // horovodrun's --config-file: its settings as options before the command
  // line's, leaving out those the command line gives (cli/plan/config_file.h).
  const ConfigTokens config =
      config_file_tokens(result.options.config_file, [&app](const std::string& name) { return app.count(name) > 0; });
  if (!config.error.empty()) return usage_error(result, "trainrun: error: " + config.error);
  ParseResult again;
  CLI::App with_config("trainrun", "trainrun");
  build(with_config, again.options);
  std::vector<std::string> args = config.tokens;
  args.insert(args.end(), scan.args.begin(), scan.args.end());
  if (!parse_args(with_config, std::move(args), again, &config, result.options.config_file)) return again;
  again.options.notes.insert(again.options.notes.begin(), config.notes.begin(), config.notes.end());
  return finish(with_config, std::move(again));
}

}  // namespace trainrun::cli
