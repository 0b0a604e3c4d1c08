// trainrun's entry point: the hidden agent mode, or parse the command line
// and launch. Exit codes are documented in man/trainrun.1.

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <set>

#include "backends/backend_versions.h"
#include "cli/agent/agent.h"
#include "cli/tree/agent_relay.h"
#include "cli/agent/cpu_binding.h"
#include "cli/doctor.h"
#include "cli/job/job_state.h"
#include "cli/job/supervisor.h"
#include "cli/launch.h"
#include "cli/plan/local_devices.h"
#include "cli/plan/options.h"
#include "cli/plan/program_path.h"
#include "cli/plan/python_package.h"
#include "cli/job/report_recorder.h"
#include "cli/process/self_executable.h"
#include "cli/process/standard_streams.h"
#include "trainrun/error.h"
#include "trainrun/version.h"

namespace {

int check_build() {
  std::cout << "trainrun " << trainrun::kVersion << "\nbackends:\n";
  for (const auto& backend : trainrun::detail::built_backends()) {
    std::cout << "  " << backend.name << "\t" << backend.version << "\n";
  }
  return 0;
}

// This build tree's Python package, or "" (an installed trainrun, or no /proc).
std::string own_python_package() {
  try {
    return trainrun::cli::build_tree_python_package(trainrun::cli::self_executable());
  } catch (const trainrun::Error&) {
    return "";
  }
}

// mpirun's --map-by ppr:N:socket: N ranks on each socket of the CPUs this
// process may use (make_plan refuses it with hosts: theirs are not known
// before they start).
void count_sockets(trainrun::cli::Options& o) {
  if (o.ppr_socket <= 0) return;
  std::set<int> sockets;
  for (const auto& cpu : trainrun::cli::read_cpu_topology().cpus) sockets.insert(cpu.package);
  const int here = std::max<int>(1, static_cast<int>(sockets.size()));
  o.npernode = o.ppr_socket * here;
  o.npernode_option += " (" + std::to_string(here) + " socket(s) here)";
}

// torchrun's --nproc-per-node auto, cpu or gpu: the ranks this machine's
// devices give (the device nodes under /dev, after CUDA_VISIBLE_DEVICES;
// the CPUs this process may use). The usage error's line, or "".
std::string count_devices(trainrun::cli::Options& o) {
  using namespace trainrun::cli;
  if (o.nproc_per_node_count.empty()) return "";
  const std::string why =
      count_nproc_per_node(o, visible_cuda_gpus("/dev", std::getenv("CUDA_VISIBLE_DEVICES")), usable_cpus());
  if (why.empty()) return "";
  std::cerr << "trainrun: error: " << why << "\n";
  return "trainrun: error: " + why;
}

// The report's file: --report FILE, else TRAINRUN_REPORT, else none ("").
std::string report_path(const trainrun::cli::Options& options) {
  const char* from_env = std::getenv(trainrun::cli::kEnvReport);
  return !options.report.empty() ? options.report : from_env ? from_env : "";
}

// A usage error found before the launch (its line already printed) ends
// here, with its report like any other way out.
int usage_error(trainrun::cli::ReportRecorder& report, const std::string& line, int status) {
  report.failed("usage_error", line);
  report.write(status);
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace trainrun::cli;
  if (!open_standard_streams()) {
    std::perror("trainrun: error: cannot open /dev/null for a closed stdin, stdout or stderr");
    return 1;
  }
  // `trainrun agent`: started by a launcher, speaks frames on stdin/stdout.
  // It relays for the hosts below it when the launcher starts a tree of agents.
  if (argc == 2 && std::strcmp(argv[1], "agent") == 0) {
    AgentRelay relay;
    return run_agent(0, 1, &relay);
  }
  // `trainrun doctor -H ...`: the multi-host checks alone (cli/doctor.h).
  if (argc >= 2 && std::strcmp(argv[1], "doctor") == 0) {
    ParseResult parsed = parse_options(argc - 1, argv + 1);
    if (parsed.exit_code >= 0) return parsed.exit_code;
    count_sockets(parsed.options);
    if (!count_devices(parsed.options).empty()) return kExitUsage;
    try {
      return run_doctor(parsed.options);
    } catch (const trainrun::Error& e) {
      std::cerr << "trainrun: error: " << e.what() << "\n";
      return 1;
    }
  }

  ParseResult parsed = parse_options(argc, argv);
  if (parsed.exit_code >= 0 && parsed.error.empty()) return parsed.exit_code;  // --help, --version
  if (parsed.exit_code < 0 && parsed.options.check_build) return check_build();
  ReportRecorder report(report_path(parsed.options), std::vector<std::string>(argv, argv + argc));
  if (parsed.exit_code >= 0) return usage_error(report, parsed.error, parsed.exit_code);  // already printed
  if (parsed.options.command.empty()) {
    const std::string line = "trainrun: error: no program given (see trainrun --help)";
    std::cerr << line << "\n";
    return usage_error(report, line, kExitUsage);
  }
  count_sockets(parsed.options);
  if (const std::string line = count_devices(parsed.options); !line.empty()) {
    return usage_error(report, line, kExitUsage);
  }
  // train.py, or torchrun's -m MODULE, --run-path SCRIPT, --no-python
  parsed.options.command =
      with_interpreter(std::move(parsed.options.command), std::getenv("PATH"), parsed.options.python_run);
  add_python_package(parsed.options, own_python_package(), std::getenv("PYTHONPATH"));
  const Options& options = parsed.options;
  int status = kExitLaunch;
  // The job's signals are read by the supervisor of each attempt (or by the
  // mpirun launcher); blocked from here to the end, so that one that comes
  // between attempts or as the job ends never kills trainrun before its
  // summary and report (docs/design.md §2).
  const BlockedJobSignals blocked;
  try {
    status = launch(options, report);  // through the mode the options choose
  } catch (const trainrun::Error& e) {
    std::cerr << "trainrun: error: " << e.what() << "\n";
    report.failed("launch_failed", std::string("trainrun: error: ") + e.what());
  }
  report.write(status);
  discard_pending_job_signals();  // the job is over
  return status;
}
