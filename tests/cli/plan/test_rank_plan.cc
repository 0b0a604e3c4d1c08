#include <doctest/doctest.h>

#include "cli/plan/rank_env.h"
#include "cli/plan/rank_plan.h"

using namespace trainrun::cli;

TEST_CASE("ranks fill hosts in order; fewer ranks than slots leave later hosts empty") {
  const auto plan = plan_ranks({{"a", 2, ""}, {"b", 2, ""}, {"c", 4, ""}}, 5);
  REQUIRE(plan.size() == 5);
  CHECK(plan[0].host == "a");
  CHECK(plan[1].host == "a");
  CHECK(plan[2].host == "b");
  CHECK(plan[4].host == "c");
  CHECK(plan[4].local_rank == 0);
  CHECK(plan[4].local_size == 1);
  CHECK(plan[2].local_size == 2);
  // local rank 0 exists on all three hosts, local rank 1 on a and b only.
  CHECK(plan[4].cross_rank == 2);
  CHECK(plan[4].cross_size == 3);
  CHECK(plan[3].cross_rank == 1);
  CHECK(plan[3].cross_size == 2);
}

TEST_CASE("one host: cross size 1") {
  const auto plan = plan_ranks({{"localhost", 4, ""}}, 4);
  for (int r = 0; r < 4; ++r) {
    CHECK(plan[r].rank == r);
    CHECK(plan[r].local_rank == r);
    CHECK(plan[r].cross_rank == 0);
    CHECK(plan[r].cross_size == 1);
  }
}

TEST_CASE("each rank's environment carries the contract and the compatibility names") {
  JobEnv job;
  job.size = 4;
  job.rendezvous_addr = "127.0.0.1";
  job.rendezvous_port = 5000;
  job.job_id = "j1";
  job.secret_hex = std::string(64, 'f');
  job.master_addr = "127.0.0.1";
  job.master_port = 6000;
  const auto plan = plan_ranks({{"h", 4, ""}}, 4);
  const EnvList env = rank_environment(plan[2], job);
  auto value = [&](const std::string& name) {
    for (const auto& [k, v] : env) {
      if (k == name) return v;
    }
    return std::string("<unset>");
  };
  CHECK(value("TRAINRUN_RANK") == "2");
  CHECK(value("TRAINRUN_SIZE") == "4");
  CHECK(value("TRAINRUN_LOCAL_RANK") == "2");
  CHECK(value("TRAINRUN_HOSTNAME") == "h");
  CHECK(value("TRAINRUN_RENDEZVOUS_PORT") == "5000");
  CHECK(value("TRAINRUN_SECRET") == job.secret_hex);
  CHECK(value("HOROVOD_RANK") == "2");
  CHECK(value("HOROVOD_CROSS_SIZE") == "1");
  CHECK(value("RANK") == "2");
  CHECK(value("WORLD_SIZE") == "4");
  CHECK(value("LOCAL_WORLD_SIZE") == "4");
  CHECK(value("MASTER_PORT") == "6000");
  CHECK(value("TRAINRUN_BACKEND") == "<unset>");
}

TEST_CASE("merge_environment overrides and appends without duplicates") {
  const auto merged = merge_environment({"A=1", "B=2", "A=3"}, {{"B", "x"}, {"C", "y=z"}});
  CHECK(merged == std::vector<std::string>{"A=3", "B=x", "C=y=z"});
}

TEST_CASE("--map-by node deals ranks one per host in turn, skipping full hosts") {
  const auto plan = plan_ranks({{"a", 1, ""}, {"b", 3, ""}, {"c", 2, ""}}, 5, MapBy::Node);
  REQUIRE(plan.size() == 5);
  const char* hosts[] = {"a", "b", "c", "b", "c"};
  const int locals[] = {0, 0, 0, 1, 1};
  for (int r = 0; r < 5; ++r) {
    CAPTURE(r);
    CHECK(plan[r].rank == r);
    CHECK(plan[r].host == hosts[r]);
    CHECK(plan[r].local_rank == locals[r]);
  }
  CHECK(plan[1].local_size == 2);  // b holds ranks 1 and 3 of 5
  CHECK(plan[0].local_size == 1);
  CHECK(plan[3].cross_rank == 0);  // local rank 1 exists on b and c
  CHECK(plan[3].cross_size == 2);
  CHECK(plan[2].cross_rank == 2);
  CHECK(plan[2].cross_size == 3);
}

TEST_CASE("the rank map of --display-map: a line, the header and one row per rank, no trailing blanks") {
  const auto plan = plan_ranks({{"a", 2, ""}, {"node-with-a-long-name", 1, ""}}, 3);
  CHECK(rank_map_row(plan[0]) == "   0  a                  0/2    0/2   ");
  CHECK(rank_map(plan, 2) ==
        "trainrun: rank map: 3 rank(s) on 2 host(s)\n"
        "rank  host              local  cross\n"
        "   0  a                  0/2    0/2\n"
        "   1  a                  1/2    0/1\n"
        "   2  node-with-a-long-name   0/1    1/2\n");
}
