#include <doctest/doctest.h>

#include <chrono>
#include <map>
#include <string>

#include "contract/world.h"
#include "trainrun/error.h"

using trainrun::Error;
using trainrun::detail::World;
using trainrun::detail::world_from_env;

namespace {

struct FakeEnv {
  std::map<std::string, std::string> vars;
  trainrun::detail::EnvLookup lookup() const {
    return [this](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

const std::string kSecret(64, 'a');

FakeEnv trainrun_env() {
  return FakeEnv{{{"TRAINRUN_RANK", "3"},
                  {"TRAINRUN_SIZE", "8"},
                  {"TRAINRUN_LOCAL_RANK", "1"},
                  {"TRAINRUN_LOCAL_SIZE", "2"},
                  {"TRAINRUN_CROSS_RANK", "1"},
                  {"TRAINRUN_CROSS_SIZE", "4"},
                  {"TRAINRUN_HOSTNAME", "h2"},
                  {"TRAINRUN_RENDEZVOUS_ADDR", "10.0.0.1"},
                  {"TRAINRUN_RENDEZVOUS_PORT", "4242"},
                  {"TRAINRUN_JOB_ID", "abc"},
                  {"TRAINRUN_SECRET", kSecret}}};
}

std::string error_of(const FakeEnv& env) {
  try {
    world_from_env(env.lookup());
  } catch (const Error& e) {
    CHECK(e.code() == Error::Code::InvalidArgument);
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("trainrun's environment wins") {
  FakeEnv env = trainrun_env();
  env.vars["OMPI_COMM_WORLD_RANK"] = "0";
  env.vars["OMPI_COMM_WORLD_SIZE"] = "1";
  const World w = world_from_env(env.lookup());
  CHECK(w.source == World::Source::Trainrun);
  CHECK(w.rank == 3);
  CHECK(w.size == 8);
  CHECK(w.local_rank == 1);
  CHECK(w.local_size == 2);
  CHECK(w.cross_rank == 1);
  CHECK(w.cross_size == 4);
  CHECK(w.hostname == "h2");
  CHECK(w.rendezvous_addr == "10.0.0.1");
  CHECK(w.rendezvous_port == 4242);
  CHECK(w.secret_hex == kSecret);
  CHECK(w.has_rendezvous());
}

TEST_CASE("Open MPI's environment when trainrun's is absent") {
  FakeEnv env{{{"OMPI_COMM_WORLD_RANK", "5"},
               {"OMPI_COMM_WORLD_SIZE", "8"},
               {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
               {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}}};
  const World w = world_from_env(env.lookup());
  CHECK(w.source == World::Source::OpenMpi);
  CHECK(w.rank == 5);
  CHECK(w.local_rank == 1);
  CHECK(w.cross_rank == 1);
  CHECK(w.cross_size == 2);
  CHECK_FALSE(w.has_rendezvous());
}

TEST_CASE("Slurm's environment, with uneven tasks per node") {
  FakeEnv env{{{"SLURM_PROCID", "6"},
               {"SLURM_NTASKS", "7"},
               {"SLURM_LOCALID", "2"},
               {"SLURM_NODEID", "1"},
               {"SLURM_TASKS_PER_NODE", "2,3(x1),2"},
               {"PMIX_RANK", "6"}}};
  const World w = world_from_env(env.lookup());
  CHECK(w.source == World::Source::Slurm);
  CHECK(w.rank == 6);
  CHECK(w.size == 7);
  CHECK(w.local_size == 3);
  CHECK(w.local_rank == 2);
  // Only node 1 has a third task: cross group of one.
  CHECK(w.cross_rank == 0);
  CHECK(w.cross_size == 1);
}

TEST_CASE("Slurm tasks without PMI are refused in one line, before MPI sees them") {
  const std::string advice = "use 'srun --mpi=pmix' or 'trainrun --launcher srun'";
  FakeEnv env{{{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"SLURM_TASKS_PER_NODE", "2"}}};
  CHECK(error_of(env) ==
        "Slurm started task 1 of 2 without PMI (SLURM_MPI_TYPE=unset), so the tasks cannot "
        "find each other: " +
            advice);
  env.vars["SLURM_MPI_TYPE"] = "none";
  CHECK(error_of(env).find("(SLURM_MPI_TYPE=none)") != std::string::npos);
  // PMIx (or PMI-2) in the environment, or a plugin other than none: MPI_Init can work.
  for (const auto& [name, value] : {std::pair{"PMIX_RANK", "1"}, {"PMI_FD", "5"}, {"SLURM_MPI_TYPE", "pmix"}}) {
    FakeEnv with = env;
    with.vars[name] = value;
    CHECK(world_from_env(with.lookup()).size == 2);
  }
  // One task is a world of one, PMI or not.
  FakeEnv one{{{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}}};
  CHECK(world_from_env(one.lookup()).size == 1);
}

TEST_CASE("a single process when nothing is set") {
  const World w = world_from_env(FakeEnv{}.lookup());
  CHECK(w.source == World::Source::Single);
  CHECK(w.rank == 0);
  CHECK(w.size == 1);
  CHECK_FALSE(w.hostname.empty());
}

TEST_CASE("malformed values are named in the error") {
  FakeEnv env = trainrun_env();
  env.vars["TRAINRUN_RANK"] = "three";
  CHECK(error_of(env) == "TRAINRUN_RANK='three' is not an integer");
  env = trainrun_env();
  env.vars["TRAINRUN_RANK"] = "8";
  CHECK(error_of(env) == "TRAINRUN_RANK=8 is not below TRAINRUN_SIZE=8");
  env = trainrun_env();
  env.vars["TRAINRUN_SIZE"] = "0";
  CHECK(error_of(env).find("TRAINRUN_SIZE='0' is out of range") == 0);
  env = trainrun_env();
  env.vars["TRAINRUN_SECRET"] = "short";
  CHECK(error_of(env).find("TRAINRUN_SECRET is missing") == 0);
  env = trainrun_env();
  env.vars.erase("TRAINRUN_RENDEZVOUS_ADDR");
  CHECK(error_of(env).find("TRAINRUN_RENDEZVOUS_ADDR is not set") == 0);
  env = trainrun_env();
  env.vars["TRAINRUN_RENDEZVOUS_PORT"] = "70000";
  CHECK(error_of(env).find("TRAINRUN_RENDEZVOUS_PORT='70000' is out of range") == 0);
  FakeEnv slurm{
      {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_TASKS_PER_NODE", "2(x"}, {"SLURM_MPI_TYPE", "pmix"}}};
  CHECK(error_of(slurm).find("SLURM_TASKS_PER_NODE='2(x' is malformed") == 0);
}

TEST_CASE("timeouts come from the environment") {
  FakeEnv env = trainrun_env();
  env.vars["TRAINRUN_START_TIMEOUT"] = "7";
  env.vars["TRAINRUN_COLLECTIVE_TIMEOUT"] = "90";
  const World w = world_from_env(env.lookup());
  CHECK(w.start_timeout == std::chrono::seconds(7));
  CHECK(w.collective_timeout == std::chrono::seconds(90));
  CHECK(w.nccl_timeout == std::chrono::seconds(90));  // follows the collective timeout...
  env.vars["TRAINRUN_NCCL_TIMEOUT"] = "45";
  CHECK(world_from_env(env.lookup()).nccl_timeout == std::chrono::seconds(45));  // ...unless set
  CHECK(world_from_env(FakeEnv{}.lookup()).nccl_timeout == std::chrono::minutes(10));
}

TEST_CASE("the core wait warning follows TRAINRUN_STALL_WARNING, the engine's interval") {
  CHECK(world_from_env(FakeEnv{}.lookup()).wait_warning == std::chrono::seconds(60));
  FakeEnv env = trainrun_env();
  env.vars["TRAINRUN_STALL_WARNING"] = "2.5";
  CHECK(world_from_env(env.lookup()).wait_warning == std::chrono::milliseconds(2500));
  env.vars["TRAINRUN_STALL_WARNING"] = "0";
  CHECK(world_from_env(env.lookup()).wait_warning == std::chrono::milliseconds(0));
  env.vars["TRAINRUN_STALL_WARNING"] = "soon";
  CHECK_THROWS_WITH(world_from_env(env.lookup()), doctest::Contains("TRAINRUN_STALL_WARNING"));
}

TEST_CASE("CUDA device settings come from the environment") {
  FakeEnv env = trainrun_env();
  World w = world_from_env(env.lookup());
  CHECK(w.cuda_device == -1);
  CHECK_FALSE(w.cuda_visible_devices_set);
  env.vars["TRAINRUN_CUDA_DEVICE"] = "3";
  env.vars["CUDA_VISIBLE_DEVICES"] = "";
  w = world_from_env(env.lookup());
  CHECK(w.cuda_device == 3);
  CHECK(w.cuda_visible_devices_set);
  env.vars["TRAINRUN_CUDA_DEVICE"] = "gpu1";
  CHECK(error_of(env) == "TRAINRUN_CUDA_DEVICE='gpu1' is not an integer");
}

TEST_CASE("cross rank follows Horovod: hosts that have a slot at this local rank") {
  using trainrun::detail::cross_rank_and_size;
  const std::vector<int> slots = {4, 2, 4};
  CHECK(cross_rank_and_size(slots, 0, 0) == std::pair<int, int>{0, 3});
  CHECK(cross_rank_and_size(slots, 2, 1) == std::pair<int, int>{2, 3});
  CHECK(cross_rank_and_size(slots, 2, 3) == std::pair<int, int>{1, 2});
  CHECK(cross_rank_and_size(slots, 0, 3) == std::pair<int, int>{0, 2});
}

TEST_CASE("elastic workers read their id and timeout only under TRAINRUN_ELASTIC=1") {
  FakeEnv env = trainrun_env();
  env.vars["TRAINRUN_WORKER_ID"] = "7";
  World w = world_from_env(env.lookup());
  CHECK_FALSE(w.elastic);
  CHECK(w.worker_id == -1);
  CHECK(w.elastic_timeout == std::chrono::seconds(600));

  env.vars["TRAINRUN_ELASTIC"] = "1";
  env.vars["TRAINRUN_ELASTIC_TIMEOUT"] = "45";
  w = world_from_env(env.lookup());
  CHECK(w.elastic);
  CHECK(w.worker_id == 7);
  CHECK(w.elastic_timeout == std::chrono::seconds(45));
  CHECK(w.generation == 0);
  CHECK(w.rank == 3);  // the generation it was first planned into, until init joins one

  env.vars.erase("TRAINRUN_ELASTIC_TIMEOUT");
  CHECK(world_from_env(env.lookup()).elastic_timeout == std::chrono::seconds(600));
}

TEST_CASE("an elastic worker without a valid id is refused, naming the variable") {
  FakeEnv env = trainrun_env();
  env.vars["TRAINRUN_ELASTIC"] = "1";
  CHECK(error_of(env) == "TRAINRUN_WORKER_ID is not set but TRAINRUN_ELASTIC=1: start the job with trainrun");
  env.vars["TRAINRUN_WORKER_ID"] = "-2";
  CHECK(error_of(env).find("TRAINRUN_WORKER_ID='-2' is out of range") == 0);
  env.vars["TRAINRUN_WORKER_ID"] = "2";
  env.vars["TRAINRUN_ELASTIC_TIMEOUT"] = "soon";
  CHECK(error_of(env) == "TRAINRUN_ELASTIC_TIMEOUT='soon' is not an integer");
  env.vars["TRAINRUN_ELASTIC"] = "yes";
  CHECK(error_of(env) == "TRAINRUN_ELASTIC='yes' is not an integer");
}
