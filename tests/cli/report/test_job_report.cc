#include <doctest/doctest.h>
#include <sys/wait.h>

#include <csignal>
#include <nlohmann/json.hpp>

#include "cli/job/job_state.h"
#include "cli/report/exit_record.h"
#include "cli/report/job_report.h"

using namespace trainrun::cli;
using nlohmann::json;

namespace {

JobReport two_ranks() {
  JobReport r;
  r.command_line = {"trainrun", "-np", "2", "./train"};
  r.version = "1.2.3";
  r.launcher = "local";
  r.hosts = {{"box", 2, false}};
  r.size = 2;
  for (int i = 0; i < 2; ++i) {
    ReportRank rank;
    rank.rank = i;
    rank.host = "box";
    rank.local_rank = i;
    r.ranks.push_back(rank);
  }
  r.outcome = "success";
  r.started_at = utc_timestamp(0);
  r.ended_at = utc_timestamp(1234);
  return r;
}

}  // namespace

TEST_CASE("exit records: status first (as older launchers read it), then wait4's usage") {
  const ExitRecord record{W_EXITCODE(3, 0), ExitRecord::Usage{2048, 1'500'000, 250'000}};
  const std::string text = encode_exit(record);
  CHECK(text == "768 2048 1500000 250000");
  CHECK(std::atoi(text.c_str()) == W_EXITCODE(3, 0));
  const auto back = decode_exit(text);
  REQUIRE(back);
  CHECK(back->status == 768);
  REQUIRE(back->usage);
  CHECK(back->usage->max_rss_kb == 2048);
  CHECK(back->usage->system_us == 250'000);
  // An older agent sends the status alone; garbage usage is dropped.
  const auto old = decode_exit("9");
  REQUIRE(old);
  CHECK(old->status == 9);
  CHECK_FALSE(old->usage);
  CHECK_FALSE(decode_exit("9 1 2 x")->usage);
  CHECK_FALSE(decode_exit("9 -1 2 3")->usage);
  CHECK_FALSE(decode_exit("x"));
  CHECK_FALSE(decode_exit(""));
}

TEST_CASE("a successful job: every rank exited 0, no failure") {
  JobReport r = two_ranks();
  for (auto& rank : r.ranks) {
    rank.pid = 100 + rank.rank;
    rank.backend = "tcp";
    rank.start_s = 0.01;
    rank.end_s = 1.5;
    rank.exit = ExitRecord{0, ExitRecord::Usage{1000, 2'000'000, 1'000}};
  }
  const json j = json::parse(to_json(r));
  CHECK(j["schema_version"] == kReportSchemaVersion);
  CHECK(j["$schema"] == kReportSchemaId);
  CHECK(j["outcome"] == "success");
  CHECK(j["failure"].is_null());
  CHECK(j["ended_at"] == "1970-01-01T00:00:01.234Z");
  CHECK(j["ranks"][1]["state"] == "exited");
  CHECK(j["ranks"][1]["exit_code"] == 0);
  CHECK(j["ranks"][1]["signal"].is_null());
  CHECK(j["ranks"][1]["user_cpu_s"] == 2.0);
  CHECK(j["ranks"][1]["backend"] == "tcp");
  CHECK(j["stragglers"].is_null());
  CHECK(j["rendezvous_s"].is_null());
}

TEST_CASE("a failed job: the failing rank, its signal, ranks never started or lost") {
  JobReport r = two_ranks();
  r.outcome = "rank_failed";
  r.summary = "trainrun: job failed: rank 1 (host box, pid 7) was killed by SIGSEGV (Segmentation fault)";
  r.failed_rank = 1;
  r.exit_code = 128 + SIGSEGV;
  r.ranks[1].pid = 7;
  r.ranks[1].exit = ExitRecord{SIGSEGV, std::nullopt};
  r.ranks[0].pid = 6;  // started, no exit report: lost
  r.stragglers = std::vector<trainrun::detail::StragglerRow>{{0, "box", 200, 150, 12.5, 30}, {1, "box", 200, 50, 0, 1}};
  r.stderr_tail = {"Traceback (most recent call last):", "RuntimeError: boom"};
  r.sigkilled = {0};
  const json j = json::parse(to_json(r));
  CHECK(j["failure"]["rank"] == 1);
  CHECK(j["failure"]["cause"] == r.summary);
  CHECK(j["failure"]["stderr_tail"] == json::array({"Traceback (most recent call last):", "RuntimeError: boom"}));
  CHECK(j["failure"]["sigkilled_ranks"] == json::array({0}));
  CHECK(j["exit_code"] == 139);
  CHECK(j["ranks"][1]["state"] == "killed");
  CHECK(j["ranks"][1]["signal"] == "SIGSEGV");
  CHECK(j["ranks"][1]["exit_code"].is_null());
  CHECK(j["ranks"][1]["max_rss_kb"].is_null());
  CHECK(j["ranks"][0]["state"] == "unknown");
  CHECK(j["stragglers"]["cycles"] == 200);
  CHECK(j["stragglers"]["ranks"][0]["last_percent"] == 75.0);
  CHECK(j["stragglers"]["ranks"][0]["median_lag_ms"] == 12.5);
}

TEST_CASE("never started ranks; bytes that are not UTF-8 do not break the report") {
  JobReport r = two_ranks();
  r.outcome = "preflight_failed";
  r.command_line.push_back("\xff\xfe");
  const json j = json::parse(to_json(r));
  CHECK(j["ranks"][0]["state"] == "not_started");
  CHECK(j["ranks"][0]["pid"].is_null());
  CHECK(j["failure"]["rank"].is_null());
  CHECK(j["failure"]["stderr_tail"] == json::array());  // always there, empty without a failing rank
  CHECK(j["failure"]["sigkilled_ranks"] == json::array());
  CHECK(j["command_line"].size() == 5);
}

TEST_CASE("JobState names the outcome and the failing rank") {
  JobState ok(2, {"a", "a"});
  ok.exited(0, 0);
  ok.exited(1, 0);
  CHECK(ok.outcome() == "success");
  JobState failed(2, {"a", "a"});
  failed.exited(1, W_EXITCODE(3, 0));
  CHECK(failed.outcome() == "rank_failed");
  CHECK(failed.failed_rank() == 1);
  JobState stopped(2, {"a", "a"});
  stopped.stop_signal(SIGINT);
  CHECK(stopped.outcome() == "signal");
  JobState late(2, {"a", "a"});
  late.timed_out(3);
  CHECK(late.outcome() == "timeout");
  JobState lost(2, {"a", "b"});
  lost.host_lost("lost connection to b");
  CHECK(lost.outcome() == "launch_failed");
}

TEST_CASE("output_errors: always there, empty when every file was written; each with file, kind, rank, error") {
  JobReport report = two_ranks();
  CHECK(json::parse(to_json(report))["output_errors"] == json::array());
  report.output_errors.push_back({"logs/rank.01/stdout", "stdout", 1, "No space left on device"});
  report.output_errors.push_back({"logs/stacks.1.txt", "stacks", std::nullopt, "No space left on device"});
  const json j = json::parse(to_json(report));
  CHECK(j["outcome"] == "success");  // lost output does not change how the job ended
  CHECK(j["output_errors"] == json::parse(R"([
    {"file": "logs/rank.01/stdout", "kind": "stdout", "rank": 1, "error": "No space left on device"},
    {"file": "logs/stacks.1.txt", "kind": "stacks", "rank": null, "error": "No space left on device"}])"));
}
