// When a trainrun is one of a per-node launch's, and its settings
// (cli/node/node_settings.h): torchrun's options, a scheduler's
// environment, and the usage errors that name what to give instead.
#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include "cli/node/node_settings.h"

using namespace trainrun::cli;
using namespace trainrun::cli::node;

namespace {

using Vars = std::map<std::string, std::string>;

NodeDecision decide(std::vector<const char*> args, const Vars& vars = {}) {
  args.insert(args.begin(), "trainrun");
  args.push_back("./train");
  const ParseResult parsed = parse_options(static_cast<int>(args.size()), args.data());
  REQUIRE(parsed.exit_code == -1);
  return decide_node_mode(parsed.options, [&vars](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

}  // namespace

TEST_CASE("torchrun's static rendezvous: --nnodes, --node-rank, --master-addr and --master-port") {
  const NodeDecision d = decide({"--nnodes", "3", "--node-rank", "1", "--master-addr", "h1", "--master-port", "23456",
                                 "--nproc-per-node", "2", "--rdzv-conf", "join_timeout=7,read_timeout=3"});
  REQUIRE(d.settings);
  const NodeSettings& s = *d.settings;
  CHECK(s.nnodes == 3);
  CHECK(s.max_nnodes == 3);
  CHECK_FALSE(s.elastic);
  CHECK(s.node_rank == 1);
  CHECK(s.endpoint() == "h1:23456");
  CHECK(s.job_id == "none");
  CHECK(s.join_timeout == std::chrono::seconds(7));
  CHECK(s.notes == std::vector<std::string>{"--rdzv-conf read_timeout: no effect (trainrun reads join_timeout and "
                                            "last_call_timeout)"});
  CHECK(decide({"--nnodes", "2", "--node-rank", "0"}).settings->endpoint() ==
        "127.0.0.1:29500");  // torchrun's defaults
}

TEST_CASE("torchrun's c10d rendezvous: the endpoint, node ranks by joining, MIN:MAX") {
  const NodeDecision d =
      decide({"--nnodes", "2:4", "--rdzv-backend", "c10d", "--rdzv-endpoint", "[fd00::1]:1234", "--rdzv-id", "j"});
  REQUIRE(d.settings);
  CHECK(d.settings->node_rank == -1);
  CHECK(d.settings->elastic);
  CHECK(d.settings->nnodes == 2);
  CHECK(d.settings->max_nnodes == 4);
  CHECK(d.settings->master_host == "fd00::1");
  CHECK(d.settings->endpoint() == "[fd00::1]:1234");
  CHECK(d.settings->job_id == "j");
  CHECK(decide({"--nnodes", "2", "--rdzv-endpoint", "h1"}).settings->master_port == 29400);
  CHECK(decide({"--nnodes", "2", "--rdzv-endpoint", "h1:x"}).error == "--rdzv-endpoint 'h1:x' is not HOST[:PORT]");
}

TEST_CASE("a scheduler's environment for a plain python train.py: MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE") {
  const Vars pod = {{"MASTER_ADDR", "job-master-0"}, {"MASTER_PORT", "23456"}, {"RANK", "2"}, {"WORLD_SIZE", "3"}};
  const NodeDecision d = decide({"--nproc-per-node", "2"}, pod);
  REQUIRE(d.settings);
  CHECK(d.settings->nnodes == 3);
  CHECK(d.settings->node_rank == 2);
  CHECK(d.settings->endpoint() == "job-master-0:23456");
  CHECK(d.settings->source.find("as PyTorchJob sets them") != std::string::npos);
  // Not inside trainrun's own ranks, not with hosts, not with one node.
  Vars inside = pod;
  inside["TRAINRUN_RANK"] = "0";
  CHECK_FALSE(decide({}, inside).settings);
  CHECK_FALSE(decide({"--local", "-np", "2"}, pod).settings);
  Vars one = pod;
  one["WORLD_SIZE"] = "1";
  one["RANK"] = "0";
  CHECK_FALSE(decide({}, one).settings);
  Vars bad = pod;
  bad["RANK"] = "3";
  CHECK(decide({}, bad).error.find("RANK=3, WORLD_SIZE=3: not a node rank below WORLD_SIZE") != std::string::npos);
}

TEST_CASE("no per-node launch without its options; one node is this machine's job") {
  CHECK_FALSE(decide({"-np", "2"}).settings);
  CHECK(decide({"-np", "2"}).error.empty());
  CHECK_FALSE(decide({"--nnodes", "1", "--node-rank", "0"}).settings);
  CHECK(decide({"--nnodes", "1", "--node-rank", "0"}).error.empty());
  CHECK_FALSE(decide({"--nnodes", "2", "-H", "a,b"}).settings);  // checked against the hosts instead
}

TEST_CASE("usage errors name what to give instead") {
  CHECK(decide({"--node-rank", "1", "-H", "a,b"}).error.find("-H starts every host's ranks from this one") !=
        std::string::npos);
  CHECK(decide({"--node-rank", "1"}).error ==
        "a per-node launch needs --nnodes N (the number of nodes; torchrun's PET_NNODES)");
  CHECK(decide({"--nnodes", "2", "--node-rank", "2"}).error == "--node-rank 2 is not below --nnodes 2");
  CHECK(decide({"--nnodes", "2", "--node-rank", "1", "--launcher", "mpirun"}).error ==
        "--launcher mpirun cannot start a per-node launch's ranks");
  CHECK(decide({"--nnodes", "2", "--node-rank", "1", "--min-np", "2"}).error.find("--nnodes MIN:MAX") !=
        std::string::npos);
  CHECK(decide({"--nnodes", "2", "--rdzv-conf", "join_timeout"}).error ==
        "--rdzv-conf 'join_timeout' is not KEY=VALUE");
  CHECK(decide({"--nnodes", "2", "--rdzv-conf", "join_timeout=0"}).error.find("not a number of seconds") !=
        std::string::npos);
}

TEST_CASE("the shared secret: --rdzv-secret-file, else TRAINRUN_RDZV_SECRET") {
  CHECK(decide({"--nnodes", "2", "--rdzv-secret-file", "/s"}).settings->secret_file == "/s");
  CHECK(decide({"--nnodes", "2"}, {{"TRAINRUN_RDZV_SECRET", "x"}}).settings->secret_from_env);
  CHECK_FALSE(decide({"--nnodes", "2", "--rdzv-secret-file", "/s"}, {{"TRAINRUN_RDZV_SECRET", "x"}})
                  .settings->secret_from_env);  // the file wins
}
