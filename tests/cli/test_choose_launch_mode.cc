// Which launch mode runs a job (cli/choose_launch_mode.h), and what the
// agent modes tell the launcher about a plan: how the report names them,
// how each host's agent is reached, the lines --dry-run and --verbose show.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "cli/choose_launch_mode.h"
#include "cli/mode/local_ssh_launch_mode.h"
#include "cli/mpirun/mpirun_launch_mode.h"
#include "cli/plan/local_host.h"
#include "cli/srun/srun_launch_mode.h"

using namespace trainrun::cli;

namespace {

using Vars = std::map<std::string, std::string>;

Options parse(std::vector<const char*> args) {
  args.insert(args.begin(), "trainrun");
  args.push_back("./train");
  const ParseResult parsed = parse_options(static_cast<int>(args.size()), args.data());
  REQUIRE(parsed.exit_code == -1);
  return parsed.options;
}

LaunchModeChoice choose(const std::vector<const char*>& args, const Vars& vars) {
  const GetEnv env = [&vars](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
  return choose_launch_mode(parse(args), env);
}

// A Slurm allocation of this machine (2 slots), with an `srun` in PATH.
struct FakeAllocation {
  std::filesystem::path bin =
      std::filesystem::temp_directory_path() / ("trainrun-test-srun-" + std::to_string(::getpid()));
  Vars vars;
  FakeAllocation() {
    std::filesystem::create_directories(bin);
    std::ofstream(bin / "srun") << "#!/bin/sh\nexit 1\n";
    std::filesystem::permissions(bin / "srun", std::filesystem::perms::owner_all);
    vars = {{"SLURM_JOB_ID", "12"},
            {"SLURM_JOB_NODELIST", this_host_name()},
            {"SLURM_TASKS_PER_NODE", "2"},
            {"PATH", bin.string()}};
  }
  ~FakeAllocation() { std::filesystem::remove_all(bin); }
};

}  // namespace

TEST_CASE("the chooser: mpirun when asked, srun inside an allocation, else local and SSH") {
  const Vars none;
  CHECK(dynamic_cast<const LocalSshLaunchMode*>(choose({"-np", "2"}, none).mode.get()));
  CHECK(dynamic_cast<const LocalSshLaunchMode*>(choose({"--launcher", "local", "-np", "2"}, none).mode.get()));
  CHECK(dynamic_cast<const MpirunLaunchMode*>(choose({"--launcher", "mpirun", "-np", "2"}, none).mode.get()));
  CHECK(dynamic_cast<const MpirunLaunchMode*>(choose({"--mpi", "-np", "2"}, none).mode.get()));
  const FakeAllocation slurm;
  CHECK(dynamic_cast<const SrunLaunchMode*>(choose({}, slurm.vars).mode.get()));
  CHECK(dynamic_cast<const SrunLaunchMode*>(choose({"--launcher", "srun"}, slurm.vars).mode.get()));
  CHECK(dynamic_cast<const LocalSshLaunchMode*>(choose({"--local", "-np", "2"}, slurm.vars).mode.get()));
  CHECK(dynamic_cast<const MpirunLaunchMode*>(choose({"--launcher", "mpirun"}, slurm.vars).mode.get()));
}

TEST_CASE("an elastic job runs on local and SSH agents; its own checks refuse the other launchers") {
  const FakeAllocation slurm;
  for (const char* launcher : {"mpirun", "srun", "local"}) {
    const LaunchModeChoice choice = choose({"--launcher", launcher, "--min-np", "1", "--max-np", "2"}, slurm.vars);
    CHECK(dynamic_cast<const LocalSshLaunchMode*>(choice.mode.get()));
    CHECK(choice.error == "");
  }
}

TEST_CASE("srun's usage errors reach the launcher, with no mode") {
  const LaunchModeChoice outside = choose({"--launcher", "srun"}, {});
  CHECK_FALSE(outside.mode);
  CHECK(outside.error.find("--launcher srun needs a Slurm allocation") == 0);
  Vars no_srun = FakeAllocation().vars;
  no_srun["PATH"] = "/nonexistent";
  const LaunchModeChoice missing = choose({}, no_srun);
  CHECK_FALSE(missing.mode);
  CHECK(missing.error == "srun not found in PATH, inside Slurm job 12 (" + this_host_name() +
                             ":2) (--launcher local runs every rank on this machine instead)");
}

TEST_CASE("srun's mode: a step per host, announced, named srun in the report") {
  const FakeAllocation slurm;
  const LaunchModeChoice choice = choose({}, slurm.vars);
  const auto* srun = dynamic_cast<const SrunLaunchMode*>(choice.mode.get());
  REQUIRE(srun);
  Options options = parse({});
  options.hosts = this_host_name() + ":2";  // what run() plans the job on
  const std::optional<PlannedJob> planned = plan_job(options);
  REQUIRE(planned);
  CHECK(srun->name(*planned) == "srun");
  CHECK(srun->reach(*planned, 0) == AgentReach::kOther);
  CHECK(srun->dry_run_line() == "Slurm job 12 (" + this_host_name() + ":2): one srun step per host");
  CHECK(srun->announcement().value_or("").find("trainrun: inside Slurm job 12") == 0);
  const std::vector<std::string> lines = srun->agent_choices(*planned);
  CHECK(lines.size() == planned->remote.choices().size() + 1);
  CHECK(lines.back().find(this_host_name() + ": " + (slurm.bin / "srun").string() + " --nodes=1") == 0);
  const LaunchModeChoice asked = choose({"--launcher", "srun"}, slurm.vars);
  CHECK_FALSE(dynamic_cast<const SrunLaunchMode&>(*asked.mode).announcement());
}

TEST_CASE("the local mode: this machine's agent is a child, named local in the report") {
  const LocalSshLaunchMode local;
  Options options = parse({"-np", "2"});
  const std::optional<PlannedJob> planned = plan_job(options);
  REQUIRE(planned);
  CHECK(local.name(*planned) == "local");
  CHECK(local.reach(*planned, 0) == AgentReach::kChild);
  CHECK(local.agent_choices(*planned) == planned->remote.choices());
  CHECK_FALSE(local.dry_run_line());
  CHECK_FALSE(local.announcement());
}
