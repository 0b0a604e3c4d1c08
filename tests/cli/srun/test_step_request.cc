// What each node's agent step asks Slurm for, from the allocation's
// variables: the node's CPUs and GPUs of the job, and the GPU variables srun
// must not read. Table-driven: environment in, srun's options out. (No GPU
// here: the GPU cases are these; tests/slurm's cgroup case runs them on a
// node with stand-in GPUs.)
#include <doctest/doctest.h>

#include <map>

#include "cli/srun/step_request.h"

using namespace trainrun::cli;
using Strings = std::vector<std::string>;

namespace {

using Vars = std::map<std::string, std::string>;

// The allocation as slurm_allocation_from_env reads it, then the requests.
StepRequests requests(Vars vars) {
  vars.emplace("SLURM_JOB_ID", "12");
  vars.emplace("SLURM_JOB_NODELIST", "n[1-2]");
  vars.emplace("SLURM_TASKS_PER_NODE", "4,2");
  const SlurmGetEnv env = [&vars](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
  const SlurmAllocationResult found = slurm_allocation_from_env(env);
  REQUIRE(found.allocation);
  return step_requests(*found.allocation, env);
}

}  // namespace

TEST_CASE("CPUs: the node's CPUs of the job, else its slots x CPUs per task") {
  const struct {
    Vars vars;
    Strings n1, n2;
    Strings unset;
    Strings rank_env;
  } cases[] = {
      // Slurm's default: one CPU per task.
      {{}, {"--cpus-per-task=4"}, {"--cpus-per-task=2"}, {}, {"SLURM_CPUS_PER_TASK=1"}},
      {{{"SLURM_CPUS_PER_TASK", "8"}}, {"--cpus-per-task=32"}, {"--cpus-per-task=16"}, {}, {"SLURM_CPUS_PER_TASK=8"}},
      // What the job holds wins: whole cores (CR_Core on two threads a
      // core), --overcommit (fewer CPUs than tasks), -c on top.
      {{{"SLURM_JOB_CPUS_PER_NODE", "8,4"}},
       {"--cpus-per-task=8"},
       {"--cpus-per-task=4"},
       {},
       {"SLURM_CPUS_PER_TASK=1"}},
      {{{"SLURM_JOB_CPUS_PER_NODE", "1(x2)"}},
       {"--cpus-per-task=1"},
       {"--cpus-per-task=1"},
       {},
       {"SLURM_CPUS_PER_TASK=1"}},
      {{{"SLURM_JOB_CPUS_PER_NODE", "32,16"}, {"SLURM_CPUS_PER_TASK", "8"}},
       {"--cpus-per-task=32"},
       {"--cpus-per-task=16"},
       {},
       {"SLURM_CPUS_PER_TASK=8"}},
      // srun's own variables: -c overrides them; SRUN_CPUS_PER_TASK goes
      // (with it srun warns), and the ranks still see it.
      {{{"SRUN_CPUS_PER_TASK", "1"}, {"SLURM_EXACT", "1"}},
       {"--cpus-per-task=4"},
       {"--cpus-per-task=2"},
       {"SRUN_CPUS_PER_TASK"},
       {"SLURM_CPUS_PER_TASK=1", "SRUN_CPUS_PER_TASK=1"}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.n1[0]);
    const StepRequests r = requests(c.vars);
    REQUIRE(r.error == "");
    REQUIRE(r.nodes.size() == 2);
    CHECK(r.nodes[0].options == c.n1);
    CHECK(r.nodes[1].options == c.n2);
    CHECK(r.nodes[0].unset == c.unset);
    CHECK(r.rank_env == c.rank_env);
  }
}

TEST_CASE("GPUs: the node's GPUs of the job, whichever way the allocation asked") {
  // Nodes n1 (4 task slots) and n2 (2); 16 and 8 CPUs.
  const struct {
    const char* what;
    Vars vars;
    std::string n1, n2;  // the --gres option; "" for none
    Strings unset;
  } cases[] = {
      {"no GPU", {}, "", "", {}},
      {"--gpus-per-node=4", {{"SLURM_GPUS_PER_NODE", "4"}}, "--gres=gpu:4", "--gres=gpu:4", {"SLURM_GPUS_PER_NODE"}},
      {"--gpus-per-node=a100:2,v100:1",
       {{"SLURM_GPUS_PER_NODE", "a100:2,v100:1"}},
       "--gres=gpu:a100:2,gpu:v100:1",
       "--gres=gpu:a100:2,gpu:v100:1",
       {"SLURM_GPUS_PER_NODE"}},
      {"--gpus-per-task=1 (the agent is one task: it would get one GPU)",
       {{"SLURM_GPUS_PER_TASK", "1"}, {"SLURM_GPUS_ON_NODE", "4"}, {"SLURM_JOB_GPUS", "0,1,2,3"}},
       "--gres=gpu:4",
       "--gres=gpu:2",
       {"SLURM_GPUS_PER_TASK"}},
      {"--gpus-per-task=gpu:h100:2",
       {{"SLURM_GPUS_PER_TASK", "gpu:h100:2"}},
       "--gres=gpu:h100:8",
       "--gres=gpu:h100:4",
       {"SLURM_GPUS_PER_TASK"}},
      {"--ntasks-per-gpu=2 (with it in srun's environment Slurm refuses the step)",
       {{"SLURM_NTASKS_PER_GPU", "2"}, {"SLURM_JOB_GPUS", "0,1"}},
       "--gres=gpu:2",
       "--gres=gpu:1",
       {"SLURM_NTASKS_PER_GPU"}},
      {"--ntasks-per-gpu=3: the slots over it, rounded up",
       {{"SLURM_NTASKS_PER_GPU", "3"}},
       "--gres=gpu:2",
       "--gres=gpu:1",
       {"SLURM_NTASKS_PER_GPU"}},
      {"--gpus=6 over two nodes: an even share (else srun asks one node for all six)",
       {{"SLURM_GPUS", "6"}, {"SLURM_GPUS_ON_NODE", "3"}},
       "--gres=gpu:3",
       "--gres=gpu:3",
       {"SLURM_GPUS"}},
      {"--gres=gpu:2 in a batch step",
       {{"SLURM_GPUS_ON_NODE", "2"}, {"SLURM_JOB_GPUS", "4,5"}},
       "--gres=gpu:2",
       "--gres=gpu:2",
       {}},
      {"--gres=gpu:4 under salloc (no SLURM_GPUS_ON_NODE)",
       {{"SLURM_JOB_GPUS", "0-3"}},
       "--gres=gpu:4",
       "--gres=gpu:4",
       {}},
      {"SLURM_GRES exported: its gpu entries, and its other entries kept",
       {{"SLURM_GRES", "gpu:a100:2,nvme:1"}},
       "--gres=gpu:a100:2,nvme:1",
       "--gres=gpu:a100:2,nvme:1",
       {}},
      {"SLURM_GRES without a count", {{"SLURM_GRES", "gpu"}}, "--gres=gpu:1", "--gres=gpu:1", {}},
      {"SLURM_GRES's other entries with per-node GPUs",
       {{"SLURM_GRES", "nvme:1"}, {"SLURM_GPUS_PER_NODE", "2"}},
       "--gres=gpu:2,nvme:1",
       "--gres=gpu:2,nvme:1",
       {"SLURM_GPUS_PER_NODE"}},
      {"per task wins over the batch node's count, and every GPU variable goes",
       {{"SLURM_GPUS_PER_TASK", "1"}, {"SLURM_GPUS", "6"}, {"SLURM_GPUS_PER_SOCKET", "1"}},
       "--gres=gpu:4",
       "--gres=gpu:2",
       {"SLURM_GPUS", "SLURM_GPUS_PER_SOCKET", "SLURM_GPUS_PER_TASK"}},
      {"zero GPUs asked: no GPU request", {{"SLURM_GPUS_PER_NODE", "0"}}, "", "", {}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    Vars vars = c.vars;
    vars.emplace("SLURM_JOB_CPUS_PER_NODE", "16,8");
    const StepRequests r = requests(vars);
    REQUIRE(r.error == "");
    REQUIRE(r.nodes.size() == 2);
    const auto expect = [](const char* cpus, const std::string& gres) {
      Strings options{cpus};
      if (!gres.empty()) options.push_back(gres);
      return options;
    };
    CHECK(r.nodes[0].options == expect("--cpus-per-task=16", c.n1));
    CHECK(r.nodes[1].options == expect("--cpus-per-task=8", c.n2));
    CHECK(r.nodes[0].unset == c.unset);
    CHECK(r.nodes[1].unset == c.unset);
    // The ranks see the job's values of what the step changed.
    Strings rank_env{"SLURM_CPUS_PER_TASK=1"};
    for (const std::string& name : c.unset) rank_env.push_back(name + "=" + vars.at(name));
    CHECK(r.rank_env == rank_env);
  }
}

TEST_CASE("a variable trainrun cannot read is one error naming it") {
  const struct {
    Vars vars;
    const char* error;
  } cases[] = {
      {{{"SLURM_CPUS_PER_TASK", "0"}}, "SLURM_CPUS_PER_TASK='0' is not a number of CPUs"},
      {{{"SLURM_GPUS_PER_TASK", "a100"}}, "SLURM_GPUS_PER_TASK='a100' is not a GPU count like 2 or a100:2"},
      {{{"SLURM_GPUS_PER_NODE", ":2"}}, "SLURM_GPUS_PER_NODE=':2' is not a GPU count like 2 or a100:2"},
      {{{"SLURM_NTASKS_PER_GPU", "0"}}, "SLURM_NTASKS_PER_GPU='0' is not a number of tasks"},
      {{{"SLURM_GPUS_ON_NODE", "two"}}, "SLURM_GPUS_ON_NODE='two' is not a number of GPUs"},
      {{{"SLURM_GRES", "gpu:a100:x"}}, "SLURM_GRES='gpu:a100:x' is not a list like gpu:2 or gpu:a100:2,nvme:1"},
      {{{"SLURM_GPUS", "3"}},
       "SLURM_GPUS='3' (--gpus) does not say how the job's GPUs are spread over its 2 nodes: ask salloc/sbatch "
       "for --gpus-per-node or --gpus-per-task"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.error);
    const StepRequests r = requests(c.vars);
    CHECK(r.nodes.empty());
    CHECK(r.error == c.error);
  }
}
