#include "cli/options.h"

#include <CLI/CLI.hpp>
#include <iostream>

#include "trainrun/version.h"

namespace trainrun::cli {
namespace {

constexpr const char* kDescription =
    "trainrun: start a distributed training job and supervise it.\n\n"
    "  trainrun --local -np 4 ./train [args...]\n"
    "  trainrun --launcher mpirun -np 4 ./train [args...]\n";

void build(CLI::App& app, Options& o) {
  app.description(kDescription);
  app.prefix_command();  // everything from the program name on belongs to the program
  app.set_version_flag("--version", std::string("trainrun ") + kVersion);

  const char* job = "Job";
  app.add_option("--np", o.np, "Number of ranks to start (also -np)")
      ->check(CLI::Range(1, 1 << 20))->group(job);
  app.add_flag("--local", o.local, "Run every rank on this machine")->group(job);
  app.add_option("--backend", o.backend, "Collective backend for the ranks: gloo, mpi or nccl")
      ->check(CLI::IsMember({"gloo", "mpi", "nccl"}))->group(job);

  const char* engine = "Launch through Open MPI";
  app.add_option("--launcher", o.launcher, "How ranks start: local (default) or mpirun")
      ->check(CLI::IsMember({"local", "mpirun"}))->group(engine);
  app.add_flag_callback("--mpi", [&o] { o.launcher = "mpirun"; }, "Same as --launcher mpirun")
      ->group(engine);
  app.add_option("--mpi-args", o.mpi_args, "Extra mpirun arguments, one string split like a shell would")
      ->group(engine);
  app.add_flag("!--no-tag-output", o.tag_output, "Do not pass --tag-output to mpirun")->group(engine);
  app.add_flag("--dry-run", o.dry_run, "Print the mpirun command and exit")->group(engine);

  const char* control = "Supervision";
  app.add_option("--start-timeout", o.start_timeout_s,
                 "Seconds every rank may take to reach the rendezvous (default 30)")
      ->check(CLI::Range(1, 86400))->group(control);
  app.add_option("--grace", o.grace_s, "Seconds between SIGTERM and SIGKILL on teardown (default 5)")
      ->check(CLI::Range(0.0, 3600.0))->group(control);

  const char* info = "Information";
  app.add_flag("--verbose", o.verbose, "Print what trainrun decides and does")->group(info);
  app.add_flag("--check-build", o.check_build, "Print the built backends and their versions")
      ->group(info);
}

bool takes_value(const std::string& token, void* ctx) {
  auto* app = static_cast<CLI::App*>(ctx);
  if (token.find('=') != std::string::npos) return false;
  const CLI::Option* opt = app->get_option_no_throw(token);
  return opt && opt->get_items_expected_min() > 0;
}

}  // namespace

std::vector<std::string> rewrite_np(const std::vector<std::string>& args,
                                    bool (*value_follows)(const std::string&, void*), void* ctx) {
  std::vector<std::string> out = args;
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::string& token = out[i];
    if (token == "--" || token.empty() || token[0] != '-' || token == "-") break;
    if (token == "-np" || token.rfind("-np=", 0) == 0) {
      token.insert(0, "-");
      if (token == "--np") ++i;
      continue;
    }
    if (value_follows(token, ctx)) ++i;
  }
  return out;
}

ParseResult parse_options(int argc, const char* const* argv) {
  ParseResult result;
  CLI::App app("trainrun", "trainrun");
  build(app, result.options);
  std::vector<std::string> args(argv + 1, argv + argc);
  args = rewrite_np(args, takes_value, &app);
  std::reverse(args.begin(), args.end());  // CLI11 2.1 parses a reversed vector
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp& e) {
    result.exit_code = app.exit(e);
    return result;
  } catch (const CLI::CallForVersion& e) {
    result.exit_code = app.exit(e);
    return result;
  } catch (const CLI::ParseError& e) {
    std::cerr << "trainrun: error: " << e.what() << "\n"
              << "Run 'trainrun --help' for usage.\n";
    result.exit_code = 2;
    return result;
  }
  std::vector<std::string> command = app.remaining();
  if (!command.empty() && command.front() == "--") command.erase(command.begin());
  else if (!command.empty() && command.front().size() > 1 && command.front()[0] == '-') {
    std::cerr << "trainrun: error: unknown option '" << command.front() << "'\n"
              << "Run 'trainrun --help' for usage.\n";
    result.exit_code = 2;
    return result;
  }
  result.options.command = std::move(command);
  return result;
}

}  // namespace trainrun::cli
