// When trainrun starts its agents with srun, and the srun step it runs for
// each node; what the user sees when the allocation and the options clash.
#include <doctest/doctest.h>

#include <map>

#include "cli/plan/options.h"
#include "cli/srun/srun_mode.h"

using namespace trainrun::cli;

namespace {

const std::map<std::string, std::string> kAllocation = {
    {"SLURM_JOB_ID", "12"}, {"SLURM_JOB_NODELIST", "n[1-2]"}, {"SLURM_TASKS_PER_NODE", "2(x2)"}};

SrunDecision decide(std::vector<const char*> args, const std::map<std::string, std::string>& vars = kAllocation,
                    std::optional<std::string> srun = "/usr/bin/srun") {
  args.insert(args.begin(), "trainrun");
  args.push_back("./train");
  const ParseResult parsed = parse_options(static_cast<int>(args.size()), args.data());
  REQUIRE(parsed.exit_code == -1);
  const SlurmGetEnv env = [&vars](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
  return decide_srun_mode(parsed.options, env, srun, "/opt/trainrun");
}

}  // namespace

TEST_CASE("inside an allocation without hosts, srun starts the agents (announced)") {
  for (const auto& args : {std::vector<const char*>{}, {"-np", "3"}, {"--launcher", "srun"}}) {
    const SrunDecision d = decide(args);
    REQUIRE(d.mode);
    CHECK(d.error == "");
    CHECK(d.mode->allocation.host_option() == "n1:2,n2:2");
    const bool automatic = args.empty() || args[0] == std::string("-np");
    CHECK(d.mode->automatic == automatic);
  }
  const SrunDecision automatic = decide({});
  CHECK(automatic.mode->announcement() ==
        "trainrun: inside Slurm job 12 (n1:2,n2:2): starting one agent per node with srun "
        "(--launcher local runs every rank here instead)");
}

TEST_CASE("the agent's step: one task on one node with its CPUs, raw stdout, no MPI") {
  const SrunDecision d = decide({"--launcher", "srun"});
  REQUIRE(d.mode);
  CHECK(d.mode->agent_command("n2") ==
        std::vector<std::string>{"/usr/bin/srun", "--nodes=1", "--ntasks=1", "--nodelist=n2", "--cpus-per-task=2",
                                 "--overlap", "--unbuffered", "--mpi=none", "--kill-on-bad-exit=0",
                                 "--job-name=trainrun-agent", "--quiet", "/opt/trainrun", "agent"});
}

TEST_CASE("the agent's step holds its node's GPUs; srun does not read the per-task ones") {
  std::map<std::string, std::string> vars = kAllocation;
  vars["SLURM_JOB_CPUS_PER_NODE"] = "16,8";
  vars["SLURM_TASKS_PER_NODE"] = "4,2";
  vars["SLURM_GPUS_PER_TASK"] = "1";
  const SrunDecision d = decide({}, vars);
  REQUIRE(d.mode);
  CHECK(d.mode->agent_command("n1") ==
        std::vector<std::string>{"/usr/bin/env", "-u", "SLURM_GPUS_PER_TASK", "/usr/bin/srun", "--nodes=1",
                                 "--ntasks=1", "--nodelist=n1", "--cpus-per-task=16", "--gres=gpu:4", "--overlap",
                                 "--unbuffered", "--mpi=none", "--kill-on-bad-exit=0", "--job-name=trainrun-agent",
                                 "--quiet", "/opt/trainrun", "agent"});
  const std::vector<std::string> n2 = d.mode->agent_command("n2");
  CHECK(std::vector<std::string>(n2.begin() + 7, n2.begin() + 9) ==
        std::vector<std::string>{"--cpus-per-task=8", "--gres=gpu:2"});
  // A host that joins later (elastic) and is not in the allocation: no request.
  CHECK(d.mode->agent_command("m9")[0] == "/usr/bin/srun");
  // The ranks still see the job's values.
  CHECK(d.mode->rank_env == std::vector<std::string>{"SLURM_CPUS_PER_TASK=1", "SLURM_GPUS_PER_TASK=1"});
}

TEST_CASE("hosts, --local, another launcher or no allocation: the old way") {
  for (const auto& args : {std::vector<const char*>{"--launcher", "local", "-np", "2"},
                           {"--local", "-np", "2"},
                           {"-H", "a:2"},
                           {"--launcher", "mpirun", "-np", "2"}}) {
    const SrunDecision d = decide(args);
    CHECK_FALSE(d.mode);
    CHECK(d.error == "");
  }
  const SrunDecision outside = decide({"-np", "2"}, {});
  CHECK_FALSE(outside.mode);
  CHECK(outside.error == "");
}

TEST_CASE("clashes are usage errors that say what to do") {
  const struct {
    std::vector<const char*> args;
    std::map<std::string, std::string> vars;
    const char* error;
  } cases[] = {
      {{"--launcher", "srun", "-np", "2"},
       {},
       "--launcher srun needs a Slurm allocation, and SLURM_JOB_ID is not set: run trainrun inside salloc "
       "or an sbatch script (e.g. salloc -n 4 trainrun ./train)"},
      {{"--launcher", "srun", "-H", "a:2"},
       kAllocation,
       "--launcher srun takes its hosts from the Slurm allocation; it cannot be combined with -H, "
       "--hostfile or --local"},
      {{"-np", "5"},
       kAllocation,
       "-np 5 exceeds the 4 task slot(s) of Slurm job 12 (n1:2,n2:2): ask salloc/sbatch for more tasks "
       "(-n 5) (--launcher local runs every rank on this machine instead)"},
      {{"--launcher", "srun", "-np", "5"},
       kAllocation,
       "-np 5 exceeds the 4 task slot(s) of Slurm job 12 (n1:2,n2:2): ask salloc/sbatch for more tasks (-n 5)"},
      {{"--launcher", "srun", "--backend", "mpi"},
       kAllocation,
       "--backend mpi needs ranks that MPI starts itself: under Slurm run 'srun --mpi=pmix ./train' or "
       "'trainrun --launcher mpirun'; trainrun's srun agents give tcp (or nccl)"},
      {{},
       {{"SLURM_JOB_ID", "12"}, {"SLURM_JOB_NODELIST", "n[1-"}, {"SLURM_TASKS_PER_NODE", "1"}},
       "SLURM_JOB_NODELIST='n[1-': 'n[1-' has a '[' without ']' (--launcher local runs every rank on this "
       "machine instead)"},
      {{},
       {{"SLURM_JOB_ID", "12"},
        {"SLURM_JOB_NODELIST", "n[1-2]"},
        {"SLURM_TASKS_PER_NODE", "1(x2)"},
        {"SLURM_GPUS", "3"}},
       "SLURM_GPUS='3' (--gpus) does not say how the job's GPUs are spread over its 2 nodes: ask salloc/sbatch "
       "for --gpus-per-node or --gpus-per-task (--launcher local runs every rank on this machine "
       "instead)"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.error);
    const SrunDecision d = decide(c.args, c.vars);
    CHECK_FALSE(d.mode);
    CHECK(d.error == c.error);
  }
  const SrunDecision no_srun = decide({}, kAllocation, std::nullopt);
  CHECK(no_srun.error ==
        "srun not found in PATH, inside Slurm job 12 (n1:2,n2:2) (--launcher local runs every rank on this "
        "machine instead)");
}
