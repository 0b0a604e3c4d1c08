// Slurm's compressed host lists and per-node counts, and the allocation
// trainrun reads from salloc/sbatch's variables: table-driven.
#include <doctest/doctest.h>

#include <map>

#include "cli/srun/slurm_allocation.h"

using namespace trainrun::cli;
using Hosts = std::vector<std::string>;

namespace {

struct Env {
  std::map<std::string, std::string> vars;
  SlurmGetEnv lookup() const {
    return [this](const char* name) -> const char* {
      const auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

}  // namespace

TEST_CASE("host lists expand as scontrol show hostnames does") {
  const struct {
    const char* text;
    Hosts hosts;
  } cases[] = {
      {"vm", {"vm"}},
      {"n1,n2", {"n1", "n2"}},
      {"n[1-3,5],m7", {"n1", "n2", "n3", "n5", "m7"}},
      {"n[01-03]", {"n01", "n02", "n03"}},
      {"n[8-10]", {"n8", "n9", "n10"}},
      {"n[08-10]", {"n08", "n09", "n10"}},
      {"n[0-1]", {"n0", "n1"}},
      {"gpu[1-2]-ib", {"gpu1-ib", "gpu2-ib"}},
      {"r[1-2]-n[01-02]", {"r1-n01", "r1-n02", "r2-n01", "r2-n02"}},
      {"a[3],b", {"a3", "b"}},
      {"node-1.example.org,node-2", {"node-1.example.org", "node-2"}},
      {"n1 n2\tn3", {"n1", "n2", "n3"}},
      {"n[1-2],,n3,", {"n1", "n2", "n3"}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.text);
    const SlurmHostList list = expand_slurm_host_list(c.text);
    CHECK(list.error == "");
    CHECK(list.hosts == c.hosts);
  }
}

TEST_CASE("malformed host lists say what is wrong, quoting it") {
  const struct {
    const char* text;
    const char* error;
  } cases[] = {
      {"", "no host"},
      {"n[1-3", "'n[1-3' has a '[' without ']'"},
      {"n1-3]", "'n1-3]' has a ']' without '['"},
      {"n[3-1]", "in 'n[3-1]': '3-1' counts down"},
      {"n[a-b]", "in 'n[a-b]': 'a-b' is not a number or a range like 1-4"},
      {"n[]", "in 'n[]': '' is not a number or a range like 1-4"},
      {"n[1,,2]", "in 'n[1,,2]': '' is not a number or a range like 1-4"},
      {"n[1-99999999]", "in 'n[1-99999999]': more than 65536 hosts"},
      {"a[1-300]b[1-300]", "more than 65536 hosts"},
      {"n[-1]", "in 'n[-1]': '-1' is not a number or a range like 1-4"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.text);
    const SlurmHostList list = expand_slurm_host_list(c.text);
    CHECK(list.error == c.error);
    CHECK(list.hosts.empty());
  }
}

TEST_CASE("an allocation: nodes with their task slots and CPUs") {
  Env env{{{"SLURM_JOB_ID", "12"}, {"SLURM_JOB_NODELIST", "n[1-3],m7"}, {"SLURM_TASKS_PER_NODE", "2(x3),1"}}};
  const SlurmAllocationResult found = slurm_allocation_from_env(env.lookup());
  REQUIRE(found.allocation);
  CHECK(found.error == "");
  CHECK(found.allocation->job_id == "12");
  CHECK(found.allocation->slots() == 7);
  CHECK(found.allocation->host_option() == "n1:2,n2:2,n3:2,m7:1");
  CHECK(found.allocation->description() == "Slurm job 12 (n1:2,n2:2,n3:2,m7:1)");

  CHECK(found.allocation->cpus.empty());

  // Older names, and CPUs per node when tasks were not asked for.
  Env old{{{"SLURM_JOBID", "7"}, {"SLURM_NODELIST", "vm"}, {"SLURM_JOB_CPUS_PER_NODE", "8"}}};
  const SlurmAllocationResult cpus = slurm_allocation_from_env(old.lookup());
  REQUIRE(cpus.allocation);
  CHECK(cpus.allocation->host_option() == "vm:8");
  CHECK(cpus.allocation->cpus == std::vector<int>{8});

  // A node with no task gets no rank, and its CPUs go with it.
  env.vars["SLURM_TASKS_PER_NODE"] = "0,3(x2),1";
  env.vars["SLURM_JOB_CPUS_PER_NODE"] = "4,6(x2),2";
  const SlurmAllocationResult sparse = slurm_allocation_from_env(env.lookup());
  CHECK(sparse.allocation->host_option() == "n2:3,n3:3,m7:1");
  CHECK(sparse.allocation->cpus == std::vector<int>{6, 6, 2});
}

TEST_CASE("outside an allocation there is none, and no error") {
  const SlurmAllocationResult none = slurm_allocation_from_env(Env{}.lookup());
  CHECK_FALSE(none.allocation);
  CHECK(none.error == "");
}

TEST_CASE("a broken allocation is an error naming the variable") {
  const struct {
    std::map<std::string, std::string> vars;
    const char* error;
  } cases[] = {
      {{{"SLURM_JOB_ID", "3"}, {"SLURM_TASKS_PER_NODE", "1"}},
       "SLURM_JOB_ID=3 is set but SLURM_JOB_NODELIST is not: not a Slurm allocation trainrun can read"},
      {{{"SLURM_JOB_ID", "3"}, {"SLURM_JOB_NODELIST", "n1"}},
       "SLURM_JOB_ID=3 is set but SLURM_TASKS_PER_NODE is not: not a Slurm allocation trainrun can read"},
      {{{"SLURM_JOB_ID", "3"}, {"SLURM_JOB_NODELIST", "n[1-2"}, {"SLURM_TASKS_PER_NODE", "1"}},
       "SLURM_JOB_NODELIST='n[1-2': 'n[1-2' has a '[' without ']'"},
      {{{"SLURM_JOB_ID", "3"}, {"SLURM_JOB_NODELIST", "n[1-2]"}, {"SLURM_TASKS_PER_NODE", "2(x"}},
       "SLURM_TASKS_PER_NODE='2(x' is malformed"},
      {{{"SLURM_JOB_ID", "3"}, {"SLURM_JOB_NODELIST", "n[1-2]"}, {"SLURM_TASKS_PER_NODE", "2(x3)"}},
       "SLURM_TASKS_PER_NODE='2(x3)' counts 3 node(s) but SLURM_JOB_NODELIST='n[1-2]' lists 2"},
      {{{"SLURM_JOB_ID", "3"}, {"SLURM_JOB_NODELIST", "n1"}, {"SLURM_TASKS_PER_NODE", "0"}},
       "SLURM_TASKS_PER_NODE='0' gives no node a task"},
      {{{"SLURM_JOB_ID", "3"},
        {"SLURM_JOB_NODELIST", "n[1-2]"},
        {"SLURM_TASKS_PER_NODE", "2(x2)"},
        {"SLURM_JOB_CPUS_PER_NODE", "4"}},
       "SLURM_JOB_CPUS_PER_NODE='4' counts 1 node(s) but SLURM_JOB_NODELIST='n[1-2]' lists 2"},
      {{{"SLURM_JOB_ID", "3"},
        {"SLURM_JOB_NODELIST", "n1"},
        {"SLURM_TASKS_PER_NODE", "2"},
        {"SLURM_JOB_CPUS_PER_NODE", "four"}},
       "SLURM_JOB_CPUS_PER_NODE='four' is malformed"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.error);
    const SlurmAllocationResult found = slurm_allocation_from_env(Env{c.vars}.lookup());
    CHECK_FALSE(found.allocation);
    CHECK(found.error == c.error);
  }
}
