#include <doctest/doctest.h>

#include <map>

#include "cli/plan/job_plan.h"

using namespace trainrun::cli;

namespace {

PlanResult plan(Options o, std::map<std::string, std::string> env = {}, std::map<std::string, std::string> files = {}) {
  auto getenv = [env](const char* name) -> const char* {
    static std::string value;
    auto it = env.find(name);
    if (it == env.end()) return nullptr;
    value = it->second;
    return value.c_str();
  };
  auto read = [files](const std::string& path, std::string* error) -> std::optional<std::string> {
    auto it = files.find(path);
    if (it == files.end()) {
      *error = "No such file or directory";
      return std::nullopt;
    }
    return it->second;
  };
  return make_plan(o, "thishost", getenv, read);
}

Options with(int np, std::string hosts = "") {
  Options o;
  o.np = np;
  o.hosts = std::move(hosts);
  o.command = {"prog"};
  return o;
}

}  // namespace

TEST_CASE("without hosts every rank is local, on this host's name") {
  const PlanResult r = plan(with(3));
  REQUIRE(r.plan);
  CHECK(r.plan->hosts.size() == 1);
  CHECK(r.plan->hosts[0].host == "thishost");
  CHECK(r.plan->ranks.size() == 3);
  CHECK(plan(with(0)).error == "-np N is required (how many ranks to start)");
}

TEST_CASE("-np defaults to every slot; fewer ranks fill hosts in order and drop unused hosts") {
  const PlanResult all = plan(with(0, "a:2,b:2"));
  REQUIRE(all.plan);
  CHECK(all.plan->ranks.size() == 4);
  const PlanResult some = plan(with(2, "a:2,b:2"));
  REQUIRE(some.plan);
  CHECK(some.plan->hosts.size() == 1);
  CHECK(some.plan->ranks[1].host == "a");
  CHECK(plan(with(5, "a:2,b:2")).error == "-np 5 exceeds the 4 slot(s) of a:2,b:2 (--oversubscribe allows it)");
}

TEST_CASE("hostfile is read through the reader, its errors are named") {
  Options o = with(0);
  o.hostfile = "hosts";
  const PlanResult r = plan(o, {}, {{"hosts", "a slots=2\nb\n"}});
  REQUIRE(r.plan);
  CHECK(r.plan->ranks.size() == 3);
  o.hostfile = "missing";
  CHECK(plan(o).error == "--hostfile missing: No such file or directory");
}

TEST_CASE("rank filter lists and ranges") {
  std::string error;
  CHECK(parse_rank_list("0,2-4,7", 8, &error) == std::set<int>{0, 2, 3, 4, 7});
  CHECK_FALSE(parse_rank_list("3-1", 8, &error));
  CHECK(error == "'3-1' is not a rank or a range like 2-5");
  CHECK_FALSE(parse_rank_list("0,8", 8, &error));
  CHECK(error == "rank 8 is not below -np 8");
  CHECK_FALSE(parse_rank_list("", 8, &error));
}

TEST_CASE("-x forwards named variables from the environment or sets them") {
  Options o = with(1);
  o.env_forward = {"A", "B=x=y", "C="};
  const PlanResult r = plan(o, {{"A", "from-env"}});
  REQUIRE(r.plan);
  CHECK(r.plan->forwarded == EnvList{{"A", "from-env"}, {"B", "x=y"}, {"C", ""}});
  o.env_forward = {"MISSING"};
  CHECK(plan(o).error == "-x MISSING: MISSING is not set in trainrun's environment (use -x MISSING=VALUE)");
  o.env_forward = {"A-B=1"};
  CHECK(plan(o).error == "-x A-B=1: 'A-B' is not a variable name");
}

TEST_CASE("conflicting host options") {
  Options o = with(1, "a");
  o.hostfile = "f";
  CHECK(plan(o).error == "-H and --hostfile cannot be used together");
  Options l = with(1, "a");
  l.local = true;
  CHECK(plan(l).error.find("--local runs every rank here") == 0);
}

TEST_CASE("engine flags become the variables the library reads, only when given") {
  Options o = with(1);
  const PlanResult none = plan(o);
  REQUIRE(none.plan);
  CHECK(none.plan->forwarded.empty());
  o.fusion_threshold_mb = 0.5;
  o.cycle_time_ms = 2.5;
  o.cache_capacity = 0;
  o.timeline = "/tmp/t.json";
  o.stall_warning_s = 30;
  o.stall_shutdown_s = 0;
  const PlanResult r = plan(o);
  REQUIRE(r.plan);
  CHECK(r.plan->forwarded == EnvList{{"TRAINRUN_FUSION_THRESHOLD", "524288"},
                                     {"TRAINRUN_CYCLE_TIME_MS", "2.5"},
                                     {"TRAINRUN_CACHE_CAPACITY", "0"},
                                     {"TRAINRUN_TIMELINE", "/tmp/t.json"},
                                     {"TRAINRUN_STALL_WARNING", "30"},
                                     {"TRAINRUN_STALL_SHUTDOWN", "0"}});
  o = with(1);
  o.timeline = "relative.json";
  const PlanResult rel = plan(o);
  REQUIRE(rel.plan);
  CHECK(rel.plan->forwarded.front().second.front() == '/');
  CHECK(rel.plan->forwarded.front().second.size() > std::string("/relative.json").size());
}

TEST_CASE("-x refuses what trainrun sets for every rank, and what an option given sets") {
  Options o = with(1);
  for (const char* name : {"TRAINRUN_RANK", "TRAINRUN_SIZE", "TRAINRUN_SECRET", "HOROVOD_RANK", "HOROVOD_CROSS_SIZE",
                           "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"}) {
    CAPTURE(name);
    o.env_forward = {std::string(name) + "=7"};
    CHECK(plan(o).error ==
          std::string("-x ") + name + ": trainrun sets this variable for every rank; it cannot be forwarded");
    o.env_forward = {name};
    CHECK(plan(o, {{name, "7"}}).error.find("it cannot be forwarded") != std::string::npos);
  }
  o.env_forward = {"TRAINRUN_START_TIMEOUT=60"};
  CHECK(plan(o).error ==
        "-x TRAINRUN_START_TIMEOUT: trainrun sets this variable for every rank from "
        "--start-timeout; it cannot be forwarded (use --start-timeout)");
  o.launcher = "mpirun";  // mpirun's ranks get it only through -x
  CHECK(plan(o).error == "");
  o = with(1);
  o.env_forward = {"TRAINRUN_BACKEND=gloo", "TRAINRUN_IFACE=eth0", "TRAINRUN_COLLECTIVE_TIMEOUT=9",
                   "TRAINRUN_CYCLE_TIME_MS=2"};
  CHECK(plan(o).error == "");
  o.backend = "mpi";
  CHECK(plan(o).error ==
        "-x TRAINRUN_BACKEND: trainrun sets this variable for every rank from --backend; it cannot "
        "be forwarded (use --backend)");
  o.backend.clear();
  o.cycle_time_ms = 1;
  CHECK(plan(o).error.find("-x TRAINRUN_CYCLE_TIME_MS: trainrun sets this variable for every rank from "
                           "--cycle-time-ms") == 0);
  o = with(1);
  o.env_forward = {"A\nB=1"};
  CHECK(plan(o).error == "-x A\\nB=1: 'A\\nB' is not a variable name");
}

TEST_CASE("the real hostfile reader: limits, directories, FIFOs") {
  std::string error;
  CHECK_FALSE(read_text_file("/dev/zero", &error));
  CHECK(error == "larger than 1 MiB (the most trainrun reads)");
  CHECK_FALSE(read_text_file("/", &error));
  CHECK(error == "is a directory");
  CHECK_FALSE(read_text_file("/nonexistent/hosts", &error));
  CHECK(error == "No such file or directory");
  CHECK(read_text_file("/dev/null", &error) == std::string());
}
