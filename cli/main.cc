// trainrun's entry point: parse the command line and hand over to the
// launcher. Exit codes are documented in man/trainrun.1.
#include <iostream>

#include "backends/registry.h"
#include "cli/local_launcher.h"
#include "cli/mpirun_launcher.h"
#include "cli/options.h"
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

}  // namespace

int main(int argc, char** argv) {
  using namespace trainrun::cli;
  ParseResult parsed = parse_options(argc, argv);
  if (parsed.exit_code >= 0) return parsed.exit_code;
  const Options& options = parsed.options;
  if (options.check_build) return check_build();
  if (options.command.empty()) {
    std::cerr << "trainrun: error: no program given\nRun 'trainrun --help' for usage.\n";
    return 2;
  }
  if (options.np < 1) {
    std::cerr << "trainrun: error: -np N is required\n";
    return 2;
  }
  if (options.dry_run && options.launcher != "mpirun") {
    std::cerr << "trainrun: error: --dry-run needs --launcher mpirun\n";
    return 2;
  }
  try {
    if (options.launcher == "mpirun") return run_mpirun(options);
    return run_local(options);
  } catch (const trainrun::Error& e) {
    std::cerr << "trainrun: error: " << e.what() << "\n";
    return 1;
  }
}
