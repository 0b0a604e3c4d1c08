// Which backend a world gets by default (docs/design.md §3): mpi under Open MPI or
// Slurm when it is built, tcp when trainrun started the job, and
// TRAINRUN_BACKEND over both. Worlds come from simulated environments.
#include <doctest/doctest.h>

#include <map>
#include <string>

#include "backends/backend_versions.h"
#include "backends/registry.h"
#include "contract/world.h"
#include "trainrun/error.h"

using trainrun::detail::choose_backend;
using trainrun::detail::World;
using trainrun::detail::world_from_env;

namespace {

using Env = std::map<std::string, std::string>;

World world_of(const Env& vars) {
  return world_from_env([&vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

bool built(const std::string& name) {
  for (const auto& b : trainrun::detail::built_backends()) {
    if (b.name == name) return true;
  }
  return false;
}

const Env kSlurm = {{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "4"}, {"SLURM_LOCALID", "1"},
                    {"SLURM_NODEID", "1"}, {"SLURM_NNODES", "2"}, {"SLURM_TASKS_PER_NODE", "2(x2)"},
                    {"PMIX_RANK", "3"}};  // srun --mpi=pmix
const Env kOpenMpi = {{"OMPI_COMM_WORLD_RANK", "1"},
                      {"OMPI_COMM_WORLD_SIZE", "4"},
                      {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                      {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}};
const Env kTrainrun = {{"TRAINRUN_RANK", "1"},
                       {"TRAINRUN_SIZE", "2"},
                       {"TRAINRUN_RENDEZVOUS_ADDR", "127.0.0.1"},
                       {"TRAINRUN_RENDEZVOUS_PORT", "4000"},
                       {"TRAINRUN_SECRET", std::string(64, 'a')}};

Env with(Env env, const std::string& name, const std::string& value) {
  env[name] = value;
  return env;
}

}  // namespace

// world_from_env's reading of SLURM_* is tested in tests/contract/test_world.cc.
TEST_CASE("a simulated srun task: mpi backend when built") {
  const World w = world_of(kSlurm);
  CHECK(w.source == World::Source::Slurm);
  CHECK(w.rank == 3);
  CHECK_FALSE(w.has_rendezvous());
  CHECK(choose_backend(w) == (built("mpi") ? "mpi" : "tcp"));
}

TEST_CASE("plain mpirun: mpi backend when built") {
  CHECK(choose_backend(world_of(kOpenMpi)) == (built("mpi") ? "mpi" : "tcp"));
}

TEST_CASE("started by trainrun: tcp, which every build has") {
  CHECK(built("tcp"));
  CHECK(choose_backend(world_of(kTrainrun)) == "tcp");
}

TEST_CASE("TRAINRUN_BACKEND overrides the default everywhere") {
  for (const Env& env : {kSlurm, kOpenMpi, kTrainrun}) {
    CHECK(choose_backend(world_of(with(env, "TRAINRUN_BACKEND", "tcp"))) == "tcp");
    CHECK(choose_backend(world_of(with(env, "TRAINRUN_BACKEND", "gloo"))) == "tcp");  // its former name
    CHECK(choose_backend(world_of(with(env, "TRAINRUN_BACKEND", "mpi"))) == "mpi");
    CHECK(choose_backend(world_of(with(env, "TRAINRUN_BACKEND", "nccl"))) == "nccl");
  }
}

TEST_CASE("an unavailable backend is a clear error naming what is built") {
  trainrun::detail::World world = world_of({});
  try {
    trainrun::detail::create_backend("udp", {world, nullptr, 0, {}});
    FAIL("no error");
  } catch (const trainrun::Error& e) {
    CHECK(e.code() == trainrun::Error::Code::InvalidArgument);
    CHECK(std::string(e.what()).find("backend 'udp' is not available (this build has: ") == 0);
  }
}

TEST_CASE("built backends report their library's version") {
  for (const auto& b : trainrun::detail::built_backends()) {
    CAPTURE(b.name);
    CHECK_FALSE(b.version.empty());
    if (b.name == "mpi") CHECK(b.version.find("MPI") != std::string::npos);
  }
}
